#include "nn.h"

#include <math.h>
#include <string.h>

#include "nn_hot.h"

void dlrt_nn_im2col(const float *in, int c, int h, int w, int k, int pad,
		    float *col)
{
	int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
	int ch, ky, kx, oy;

	for (ch = 0; ch < c; ch++)
		for (ky = 0; ky < k; ky++)
			for (kx = 0; kx < k; kx++) {
				/* Columns ox whose ix = ox + kx - pad is inside. */
				int lo = pad - kx, hi = w + pad - kx;

				if (lo < 0)
					lo = 0;
				if (hi > ow)
					hi = ow;
				for (oy = 0; oy < oh; oy++) {
					int iy = oy + ky - pad;
					float *dst = col + (size_t)oy * ow;

					if (iy < 0 || iy >= h || lo >= hi) {
						memset(dst, 0, sizeof(float) * ow);
						continue;
					}
					memset(dst, 0, sizeof(float) * lo);
					memcpy(dst + lo, in + ((size_t)ch * h + iy) * w +
					       lo + kx - pad, sizeof(float) * (hi - lo));
					memset(dst + hi, 0, sizeof(float) * (ow - hi));
				}
				col += (size_t)oh * ow;
			}
}

void dlrt_nn_col2im(const float *col, int c, int h, int w, int k, int pad,
		    float *din)
{
	int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
	int ch, ky, kx, oy, ox;

	for (ch = 0; ch < c; ch++)
		for (ky = 0; ky < k; ky++)
			for (kx = 0; kx < k; kx++) {
				int lo = pad - kx, hi = w + pad - kx;

				if (lo < 0)
					lo = 0;
				if (hi > ow)
					hi = ow;
				for (oy = 0; oy < oh; oy++) {
					int iy = oy + ky - pad;
					const float *src = col + (size_t)oy * ow;
					float *dst;

					if (iy < 0 || iy >= h)
						continue;
					dst = din + ((size_t)ch * h + iy) * w + kx - pad;
					for (ox = lo; ox < hi; ox++)
						dst[ox] += src[ox];
				}
				col += (size_t)oh * ow;
			}
}

void dlrt_nn_conv2d(const float *in, int c, int h, int w,
		    const float *wt, const float *bias, int oc, int k, int pad,
		    float *out, float *col)
{
	int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;

	dlrt_nn_im2col(in, c, h, w, k, pad, col);
	dlrt_hot_gemm_bias(wt, col, bias, out, oc, c * k * k, oh * ow);
}

void dlrt_nn_maxpool(const float *in, int c, int h, int w, int k, float *out)
{
	int oh = h / k, ow = w / k, ch, oy, ox, dy, dx;

	for (ch = 0; ch < c; ch++)
		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++) {
				const float *p = in + ((size_t)ch * h + oy * k) * w + ox * k;
				float m = p[0];

				for (dy = 0; dy < k; dy++)
					for (dx = 0; dx < k; dx++)
						if (p[dy * w + dx] > m)
							m = p[dy * w + dx];
				*out++ = m;
			}
}

void dlrt_nn_avgpool(const float *in, int c, int h, int w, int k, float *out)
{
	int oh = h / k, ow = w / k, ch, oy, ox, dy, dx;
	float inv = 1.0f / (float)(k * k);

	for (ch = 0; ch < c; ch++)
		for (oy = 0; oy < oh; oy++)
			for (ox = 0; ox < ow; ox++) {
				const float *p = in + ((size_t)ch * h + oy * k) * w + ox * k;
				float s = 0;

				for (dy = 0; dy < k; dy++)
					for (dx = 0; dx < k; dx++)
						s += p[dy * w + dx];
				*out++ = s * inv;
			}
}

void dlrt_nn_relu(float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = x[i] > 0 ? x[i] : 0;
}

void dlrt_nn_tanh(float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = tanhf(x[i]);
}

void dlrt_nn_dense(const float *in, size_t n, int nin, const float *wt,
		   const float *bias, int nout, float *out)
{
	dlrt_hot_dense(in, n, nin, wt, bias, nout, out);
}

void dlrt_nn_softmax(float *x, int n)
{
	float m = x[0], s = 0;
	int i;

	for (i = 1; i < n; i++)
		if (x[i] > m)
			m = x[i];
	for (i = 0; i < n; i++) {
		x[i] = expf(x[i] - m);
		s += x[i];
	}
	for (i = 0; i < n; i++)
		x[i] /= s;
}

int dlrt_nn_argmax(const float *x, int n)
{
	int i, best = 0;

	for (i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}
