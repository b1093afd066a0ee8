/* nn.h - the layer kernels of dlrt's tiny CNN engine (float32, NCHW).
 *
 * Plain C written for the compiler's auto-vectorizer: every hot loop is a
 * unit-stride multiply-add over `restrict` arrays, convolutions go through
 * im2col so they become one small matrix product, and nothing here allocates:
 * callers pass every output and scratch buffer (sized with the *_size helpers).
 * All convolutions and pools have stride 1 / stride = window and square
 * kernels, which is all LeNet-5 and the deeper model need.
 */
#ifndef DLRT_NN_H
#define DLRT_NN_H

#include <stddef.h>

/* out[oc][oh][ow] = bias[oc] + sum w[oc][c][ky][kx] * in[c][oy+ky-pad][ox+kx-pad],
 * with oh = h + 2*pad - k + 1 (zero padding). `col` holds c*k*k*oh*ow floats. */
void dlrt_nn_conv2d(const float *in, int c, int h, int w,
		    const float *wt, const float *bias, int oc, int k, int pad,
		    float *out, float *col);

/* Lays the k*k windows of `in` out as rows: col[(c*k+ky)*k+kx][oy*ow+ox]. */
void dlrt_nn_im2col(const float *in, int c, int h, int w, int k, int pad,
		    float *col);
/* The adjoint of im2col: adds col's entries back onto din (c x h x w). */
void dlrt_nn_col2im(const float *col, int c, int h, int w, int k, int pad,
		    float *din);

/* Non-overlapping k x k pools (stride k); oh = h / k (a ragged edge is dropped). */
void dlrt_nn_maxpool(const float *in, int c, int h, int w, int k, float *out);
void dlrt_nn_avgpool(const float *in, int c, int h, int w, int k, float *out);

void dlrt_nn_relu(float *x, size_t n);
void dlrt_nn_tanh(float *x, size_t n);

/* out[b][o] = bias[o] + sum_i wt[o][i] * in[b][i] for b < n (a batch). */
void dlrt_nn_dense(const float *in, size_t n, int nin, const float *wt,
		   const float *bias, int nout, float *out);

/* In-place, numerically stable (subtracts the maximum first). */
void dlrt_nn_softmax(float *x, int n);

/* Index of the largest element (the first one on ties). */
int dlrt_nn_argmax(const float *x, int n);

#endif
