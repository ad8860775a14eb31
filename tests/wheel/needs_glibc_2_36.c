/* A program that asks for GLIBC_2.36 (arc4random): what the wheel checks
 * (check_wheel.sh, python/wheel_tag.py) must refuse. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  printf("%u\n", arc4random());
  return 0;
}
