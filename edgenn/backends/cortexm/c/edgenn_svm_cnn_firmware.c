/* Firmware of a device that learns from raw inputs: the int8 CNN feature extractor (the
 * generated library "features", features.h) feeds the on-device SVM layer of
 * edgenn_svm_firmware.c (its buffer, SMO training, vote and I/O slots). The CNN computes the
 * features on the device; nothing but the input (e.g. a raw image) and its label comes in.
 * edgenn/backends/cortexm/svm_cnn_device.py drives it in the emulator (on a real board the
 * main of edgenn_svm_cnn_board.c calls the same functions):
 *
 *   edgenn_svm_cnn_init()            once after reset: prepare the CNN (its static arena)
 *   fill features_input(0)           the input, in the CNN's layout (manifest.json "cnn")
 *   edgenn_svm_cnn_extract()         run the CNN: its feature vector goes to the SVM's input
 *                                    slot (edgenn_arena), where edgenn_svm_append_input(label)
 *                                    and edgenn_invoke() (the vote) read it
 *   edgenn_svm_cnn_classify()        extract, then vote: returns the class index
 *   edgenn_svm_train_buffer()        one-vs-one SMO on the buffer (edgenn_svm_firmware.c)
 *
 * Functions return a negative status on failure (the CNN's FEATURES_ERROR_* or the SVM's).
 */
#include <stdint.h>
#include <string.h>

#include "features.h"
#include "svm_cnn_config.h"
#include "svm_config.h"

/* the SVM layer's I/O: [features | decision | scores | label] (edgenn_svm_firmware.c) */
extern uint8_t edgenn_arena[];
void edgenn_invoke(void);

/* why: the SVM stores the CNN's output as it is; the generator sets both from one tensor.
 * (C99 has no _Static_assert: a negative array size stops the build instead.) */
typedef char svm_cnn_feature_bytes_match[
    (FEATURES_OUTPUT0_BYTES == SVM_FEATURES * sizeof(svm_feature_t)) ? 1 : -1];
typedef char svm_cnn_feature_type_matches[
    (sizeof(FEATURES_OUTPUT0_TYPE) == sizeof(svm_feature_t)) ? 1 : -1];

int32_t edgenn_svm_cnn_init(void);
int32_t edgenn_svm_cnn_extract(void);
int32_t edgenn_svm_cnn_classify(void);

int32_t edgenn_svm_cnn_init(void)
{
    return (int32_t)features_init();
}

int32_t edgenn_svm_cnn_extract(void)
{
    const int status = features_invoke();
    if (status != FEATURES_OK) {
        return (int32_t)status;
    }
    memcpy(edgenn_arena, features_output(0), FEATURES_OUTPUT0_BYTES);
    return 0;
}

int32_t edgenn_svm_cnn_classify(void)
{
    const int32_t status = edgenn_svm_cnn_extract();
    if (status != 0) {
        return status;
    }
    edgenn_invoke();
    /* the voted class, after the decision and scores (edgenn_svm_firmware.c's layout) */
    uint32_t label;
    memcpy(&label, edgenn_arena + SVM_CNN_LABEL_AT, sizeof label);
    return (int32_t)label;
}
