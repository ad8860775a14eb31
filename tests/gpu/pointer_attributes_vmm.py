#!/usr/bin/env python3
"""What the driver answers for addresses in a reserved virtual range, mapped
and not (docs/driver-semantics.md, "Pointer attributes in a reserved range").
Reserves 1 GiB, maps 2 MiB at its start, and prints each attribute's result
at offsets 0, 4 KiB (mapped), 2 MiB and 512 MiB (not mapped), by the single
and the plural call. Usage: python3 tests/gpu/pointer_attributes_vmm.py;
exits 77 without a GPU."""
import ctypes
import sys

try:
    import torch
    if not torch.cuda.is_available():
        raise ImportError("no CUDA GPU here")
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

torch.cuda.init(); torch.zeros(1, device="cuda")
cu = ctypes.CDLL("libcuda.so.1")
u64 = ctypes.c_uint64
def chk(rc, what):
    print(f"{what}: rc={rc}")
    return rc
base = u64()
size = 1 << 30
chk(cu.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(size), ctypes.c_size_t(0), u64(0), u64(0)), "reserve")
class Loc(ctypes.Structure): _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]
class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", Loc),
                ("win32HandleMetaData", ctypes.c_void_p), ("compressionType", ctypes.c_ubyte),
                ("gpuDirectRDMACapable", ctypes.c_ubyte), ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]
p = Prop(); p.type = 1; p.location.type = 1; p.location.id = 0
h = u64()
chk(cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(2 << 20), ctypes.byref(p), u64(0)), "create")
chk(cu.cuMemMap(u64(base.value), ctypes.c_size_t(2 << 20), ctypes.c_size_t(0), h, u64(0)), "map")
class Acc(ctypes.Structure): _fields_ = [("location", Loc), ("flags", ctypes.c_int)]
a = Acc(); a.location.type = 1; a.location.id = 0; a.flags = 3
chk(cu.cuMemSetAccess(u64(base.value), ctypes.c_size_t(2 << 20), ctypes.byref(a), ctypes.c_size_t(1)), "access")
plural = {}
for off in (0, 4096, 2 << 20, 512 << 20):
    for attr, name in ((11, "RANGE_START"), (12, "RANGE_SIZE"), (7, "BUFFER_ID"), (13, "MAPPED"), (19, "MAPPING_BASE"), (18, "MAPPING_SIZE")):
        v = u64(0)
        rc = cu.cuPointerGetAttribute(ctypes.byref(v), attr, u64(base.value + off))
        print(f"off {off:#x} {name}: rc={rc} value={v.value:#x}")
    what = (ctypes.c_int * 3)(11, 12, 7)
    vals = [u64(0), u64(0), u64(0)]
    into = (ctypes.c_void_p * 3)(*[ctypes.addressof(x) for x in vals])
    rc = cu.cuPointerGetAttributes(3, what, into, u64(base.value + off))
    print(f"off {off:#x} GetAttributes(3): rc={rc} {[hex(x.value) for x in vals]}")
    plural[off] = (rc, [x.value for x in vals])
# What the fake driver models (tests/fakecuda/fake_vmm.c) and the stale check relies on.
ok = plural[0][0] == 0 and plural[0][1][:2] == [base.value, size] and plural[0][1][2] != 0 and \
    plural[512 << 20] == (0, [base.value, size, 0])
print(("PASS" if ok else "FAIL") + " the plural call names the range, buffer id 0, where nothing is mapped")
sys.exit(0 if ok else 1)
