/* weights.h - the .dlrtw weights file of the built-in models.
 *
 * Layout, all integers little-endian uint32, floats little-endian IEEE-754:
 *
 *   0  magic   8 bytes "DLRTW\r\n\x1a" (catches text-mode and truncation damage)
 *   8  version 1
 *  12  kind    model kind (arch.h: 1 lenet5, 2 deepcnn)
 *  16  ntensors
 *  20  seed          training seed            } informational, printed by
 *  24  epochs        training epochs           } dlrt-train --info; 0 if
 *  28  train_samples samples seen per epoch    } unknown
 *  32  test_acc      float, accuracy on the test set, -1 if unknown
 *  36  reserved      0
 *  40  tensors: ndim (1..4), dims[ndim], then prod(dims) floats; for each
 *      layer with parameters, in layer order, its weight then its bias
 *      (conv weight: filters x channels x k x k; dense weight: outputs x inputs)
 * end-4 CRC-32 (IEEE 802.3, as zlib/gzip) of every byte before it
 *
 * The loader checks magic, version, kind, exact file size, CRC and every
 * tensor shape against the architecture the kind names.
 */
#ifndef DLRT_WEIGHTS_H
#define DLRT_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "net.h"

#define DLRT_WEIGHTS_VERSION 1
#define DLRT_WEIGHTS_HDR 40
#define DLRT_WEIGHTS_MAX_BYTES ((size_t)64 << 20)

struct dlrt_weights_meta {
	uint32_t seed;
	uint32_t epochs;
	uint32_t train_samples;
	float test_acc;
};

uint32_t dlrt_crc32(uint32_t crc, const void *buf, size_t len);

/* Bytes dlrt_weights_encode writes for `net`. */
size_t dlrt_weights_size(const struct dlrt_net *net);
/* Serializes into buf (dlrt_weights_size(net) bytes). */
void dlrt_weights_encode(const struct dlrt_net *net, uint32_t kind,
			 const struct dlrt_weights_meta *meta, uint8_t *buf);
/* Writes path atomically (a temporary file renamed over it). */
int dlrt_weights_save(const char *path, const struct dlrt_net *net,
		      uint32_t kind, const struct dlrt_weights_meta *meta,
		      struct dlrt_err *err);

/* Validates an in-memory file and builds the network it describes into
 * `net` (caller frees with dlrt_net_free). kind/meta may be NULL. */
int dlrt_weights_parse(const uint8_t *buf, size_t len, struct dlrt_net *net,
		       uint32_t *kind, struct dlrt_weights_meta *meta,
		       struct dlrt_err *err);
int dlrt_weights_load(const char *path, struct dlrt_net *net, uint32_t *kind,
		      struct dlrt_weights_meta *meta, struct dlrt_err *err);

#endif
