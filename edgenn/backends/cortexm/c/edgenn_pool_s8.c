/* Portable int8 pooling, bit-exact with TFLite Micro's reference MaxPool / AveragePool. */
#include "edgenn_pool_s8.h"

#include "edgenn_pool_generic.h"

EDGENN_POOL_FUNCTIONS(s8, int8_t, INT8_MIN)
