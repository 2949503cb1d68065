// tilelang target: {"kind":"c","tag":"","keys":["cpu"],"host":{"kind":"c","tag":"","keys":["cpu"]}}
#include <tl_templates/cpp/common.h>

#ifdef __cplusplus
extern "C"
#endif
int32_t add_kernel(float* A, float* B, float* C);
#ifdef __cplusplus
extern "C"
#endif
int32_t add_kernel(float* A, float* B, float* C) {
  for (int32_t bx = 0; bx < 16; ++bx) {
    for (int32_t i = 0; i < 16; ++i) {
      *(float4*)(C + ((bx * 64) + (i * 4))) = (*(float4*)(A + ((bx * 64) + (i * 4))) + *(float4*)(B + ((bx * 64) + (i * 4))));
    }
  }
  return 0;
}

