/* Portable int16 pooling, bit-exact with TFLite Micro's reference int16 MaxPool / AveragePool. */
#include "edgenn_s16_misc_pool.h"

#include "edgenn_pool_generic.h"

EDGENN_POOL_FUNCTIONS(s16, int16_t, INT16_MIN)
