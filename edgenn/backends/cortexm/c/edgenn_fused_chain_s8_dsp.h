/* Fused int8 convolution chains (FusedConvChain): the intermediate maps never exist in full.
 *
 * Member k reads its input from a ring of KH_k rows; member k-1 produces exactly the rows
 * member k needs next (pull schedule), so a chain's RAM is its rings, not its maps. Every ring
 * (the chain input's included) holds int16 values minus the reader's input zero point, with
 * the reader's left/right padding columns stored as zeros and one shared zero row standing in
 * for top/bottom padding rows: a conv then runs without any bounds check, and the SMLAD
 * operand pairs are read straight from the ring rows (NHWC: for one ky, the KW*C taps of an
 * output pixel are contiguous). No im2col copy.
 *
 * Everything is laid out at generation time by edgenn/backends/cortexm/kernels/fused_chain.py:
 * meta (int32): header {n_members, variant, zero_off, gather_off, out_row_gather, 0, 0, 0}
 * (out_row_gather != 0: the 1-channel gather row lives in the next output row), then per member
 * FUSED_META_FIELDS fields (FM_* in edgenn_fused_chain_s8_dsp.c); w (uint32): every member's
 * packed weights; quant (int32): per member per output channel (padded to 4)
 * {bias, mult, shift, half}.
 * variant: 0 = ring_modulo (per-pixel (y % KH) modulo + multiply addressing), 1 = ring_hoisted
 * (row_ptrs[ky] once per output row), 2 = ring_hoisted_pair (+ 2 pixels x 4 channels SMLAD,
 * 1-channel first member as a channel-stationary row kernel).
 * scratch: the plug-in's scratch_bytes, 4-byte aligned. */
#ifndef EDGENN_FUSED_CHAIN_S8_DSP_H
#define EDGENN_FUSED_CHAIN_S8_DSP_H

#include <stdint.h>

#define FUSED_META_HEADER 8
#define FUSED_META_FIELDS 32
#define FUSED_MAX_KH 16
#define FUSED_MAX_MEMBERS 16

void edgenn_fused_chain_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const int32_t *meta,
                               const uint32_t *w, const int32_t *quant);

#endif
