"""PEP 517 build backend of the capguard wheel: meson-python builds it, then
wheel_tag.retag checks what every ELF file in it needs from the system and
tags it py3-none-manylinux_2_34_x86_64, or fails the build (wheel_tag.py
says why the tag is a promise).
"""
import os

import mesonpy
from mesonpy import build_sdist, get_requires_for_build_sdist, get_requires_for_build_wheel  # noqa: F401

from wheel_tag import retag


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = mesonpy.build_wheel(wheel_directory, config_settings, metadata_directory)
    return retag(os.path.join(wheel_directory, name))
