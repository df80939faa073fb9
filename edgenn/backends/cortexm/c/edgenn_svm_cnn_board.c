/* Board application of the device that learns from raw inputs (edgenn_svm_cnn_firmware.c and
 * edgenn_svm_firmware.c): it runs a script of commands the host staged in flash and prints
 * one result record per line on the console UART, then exits through semihosting.
 *
 * Staging area (svm_board.h; edgenn/backends/cortexm/codegen/svm_cnn_board.py writes it),
 * little-endian u32 words, then bytes:
 *
 *   magic "EDGL", bytes of one input, input count, command count,
 *   commands: {op, first input, input count} each,
 *   labels: the class index of every input (ignored for inputs that are only classified),
 *   inputs: back to back, in the CNN's input layout
 *
 * Commands and their records ("@out RECORD 0 HEX", HEX the u32 value's bytes in memory order):
 *
 *   LEARN    per input: CNN, append its features with its label; whenever the buffer fills,
 *            train (SMO, then the carry policy). One record: the samples left in the buffer.
 *   TRAIN    train on what the buffer holds. One record: the samples carried.
 *   CLASSIFY per input: CNN + vote. One record per input: the class index.
 *
 * Exit status: SVM_EXIT_OK, SVM_EXIT_ERROR (a function returned an error; the console line
 * before says which), SVM_EXIT_BAD_STAGE; a fault ends the run from startup.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "console.h"
#include "features.h"
#include "svm_board.h"
#include "svm_config.h"

/* the firmware's functions (edgenn_svm_firmware.c, edgenn_svm_cnn_firmware.c) */
int32_t edgenn_svm_append_input(uint32_t label);
int32_t edgenn_svm_train_buffer(void);
uint32_t edgenn_svm_count(void);
int32_t edgenn_svm_cnn_init(void);
int32_t edgenn_svm_cnn_extract(void);
int32_t edgenn_svm_cnn_classify(void);

extern const uint8_t SVM_STAGE_START[];
extern const uint8_t SVM_STAGE_END[];

#define SVM_HEADER_WORDS 4u
#define SVM_COMMAND_WORDS 3u

typedef struct {
    const uint8_t *commands;
    const uint8_t *labels;
    const uint8_t *inputs;
    uint32_t n_inputs;
    uint32_t n_commands;
    uint32_t record; /* records printed so far */
} svm_script;

static void put_record(svm_script *s, uint32_t value)
{
    uint8_t bytes[sizeof value];
    memcpy(bytes, &value, sizeof value);
    app_puts(SVM_OUT_PREFIX " ");
    app_put_dec((int32_t)s->record);
    app_puts(" 0 ");
    for (uint32_t b = 0; b < sizeof bytes; ++b) {
        app_put_hex8(bytes[b]);
    }
    app_putc('\n');
    s->record++;
}

/* The staged script, checked against the staging area's size and the CNN's input. */
static int open_script(svm_script *s)
{
    const uint8_t *stage = SVM_STAGE_START;
    const size_t room = (size_t)((uintptr_t)SVM_STAGE_END - (uintptr_t)SVM_STAGE_START);
    if (room < 4u * SVM_HEADER_WORDS || app_read_u32(stage) != SVM_STAGE_MAGIC) {
        return app_fail("no staged script in a staging area of bytes ", (int32_t)room,
                    SVM_EXIT_BAD_STAGE);
    }
    if (app_read_u32(stage + 4) != FEATURES_INPUT0_BYTES) {
        return app_fail("staged input bytes differ from the CNN's: ", (int32_t)app_read_u32(stage + 4),
                    SVM_EXIT_BAD_STAGE);
    }
    s->n_inputs = app_read_u32(stage + 8);
    s->n_commands = app_read_u32(stage + 12);
    /* why 64-bit: the counts come from outside and their products must not wrap */
    const uint64_t need = 4u * (uint64_t)SVM_HEADER_WORDS
                          + 4u * (uint64_t)SVM_COMMAND_WORDS * s->n_commands
                          + (4u + (uint64_t)FEATURES_INPUT0_BYTES) * s->n_inputs;
    if (need > room) {
        return app_fail("staged script overruns the staging area, bytes ", (int32_t)room,
                    SVM_EXIT_BAD_STAGE);
    }
    s->commands = stage + 4u * SVM_HEADER_WORDS;
    s->labels = s->commands + 4u * SVM_COMMAND_WORDS * s->n_commands;
    s->inputs = s->labels + 4u * s->n_inputs;
    s->record = 0;
    return SVM_EXIT_OK;
}

static void stage_input(const svm_script *s, uint32_t i)
{
    memcpy(features_input(0), s->inputs + (size_t)i * FEATURES_INPUT0_BYTES,
           FEATURES_INPUT0_BYTES);
}

static int train(void)
{
    const int32_t status = edgenn_svm_train_buffer();
    return status == 0 ? SVM_EXIT_OK : app_fail("edgenn_svm_train_buffer returned ", status,
                                            SVM_EXIT_ERROR);
}

static int learn(svm_script *s, uint32_t first, uint32_t count)
{
    for (uint32_t i = first; i < first + count; ++i) {
        stage_input(s, i);
        int32_t status = edgenn_svm_cnn_extract();
        if (status != 0) {
            return app_fail("edgenn_svm_cnn_extract returned ", status, SVM_EXIT_ERROR);
        }
        status = edgenn_svm_append_input(app_read_u32(s->labels + 4u * i));
        if (status != 0) {
            return app_fail("edgenn_svm_append_input returned ", status, SVM_EXIT_ERROR);
        }
        /* as the SVM layer learns a stream: train whenever the buffer fills */
        if (edgenn_svm_count() == SVM_CAPACITY) {
            const int trained = train();
            if (trained != SVM_EXIT_OK) {
                return trained;
            }
        }
    }
    put_record(s, edgenn_svm_count());
    return SVM_EXIT_OK;
}

static int classify(svm_script *s, uint32_t first, uint32_t count)
{
    for (uint32_t i = first; i < first + count; ++i) {
        stage_input(s, i);
        const int32_t label = edgenn_svm_cnn_classify();
        if (label < 0) {
            return app_fail("edgenn_svm_cnn_classify returned ", label, SVM_EXIT_ERROR);
        }
        put_record(s, (uint32_t)label);
    }
    return SVM_EXIT_OK;
}

static int run_command(svm_script *s, uint32_t c)
{
    const uint8_t *cmd = s->commands + 4u * SVM_COMMAND_WORDS * c;
    const uint32_t op = app_read_u32(cmd);
    const uint32_t first = app_read_u32(cmd + 4);
    const uint32_t count = app_read_u32(cmd + 8);
    if (first > s->n_inputs || count > s->n_inputs - first) {
        return app_fail("command reads past the staged inputs: command ", (int32_t)c,
                    SVM_EXIT_BAD_STAGE);
    }
    switch (op) {
    case SVM_OP_LEARN:
        return learn(s, first, count);
    case SVM_OP_TRAIN: {
        const int status = train();
        if (status == SVM_EXIT_OK) {
            put_record(s, edgenn_svm_count());
        }
        return status;
    }
    case SVM_OP_CLASSIFY:
        return classify(s, first, count);
    default:
        return app_fail("unknown command op ", (int32_t)op, SVM_EXIT_BAD_STAGE);
    }
}

int main(void)
{
    app_console_init();
    app_puts("@edgenn boot " SVM_BOARD_NAME "\n");
    svm_script script;
    int status = open_script(&script);
    if (status != SVM_EXIT_OK) {
        return status;
    }
    const int32_t init = edgenn_svm_cnn_init();
    if (init != 0) {
        return app_fail("edgenn_svm_cnn_init returned ", init, SVM_EXIT_ERROR);
    }
    for (uint32_t c = 0; c < script.n_commands; ++c) {
        status = run_command(&script, c);
        if (status != SVM_EXIT_OK) {
            return status;
        }
    }
    app_puts("@edgenn done\n");
    return SVM_EXIT_OK;
}
