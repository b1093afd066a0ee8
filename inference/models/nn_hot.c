#include "nn_hot.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__) && !defined(DLRT_NO_CLONES)
#define HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HOT
#endif

#define INLINE static inline __attribute__((always_inline))

/* c_r[p] += sum_j w[r][j] * b_j[p] for four rows r and four inputs j.
 * Parameters (not locals) carry `restrict` so GCC drops its alias checks;
 * always_inline keeps it inside the caller's AVX2 clone. */
INLINE void axpy4x4(float *restrict c0, float *restrict c1,
		    float *restrict c2, float *restrict c3,
		    const float *restrict b0, const float *restrict b1,
		    const float *restrict b2, const float *restrict b3,
		    const float *restrict w, int P)
{
	float w00 = w[0], w01 = w[1], w02 = w[2], w03 = w[3];
	float w10 = w[4], w11 = w[5], w12 = w[6], w13 = w[7];
	float w20 = w[8], w21 = w[9], w22 = w[10], w23 = w[11];
	float w30 = w[12], w31 = w[13], w32 = w[14], w33 = w[15];
	int p;

	for (p = 0; p < P; p++) {
		float x0 = b0[p], x1 = b1[p], x2 = b2[p], x3 = b3[p];

		c0[p] += w00 * x0 + w01 * x1 + w02 * x2 + w03 * x3;
		c1[p] += w10 * x0 + w11 * x1 + w12 * x2 + w13 * x3;
		c2[p] += w20 * x0 + w21 * x1 + w22 * x2 + w23 * x3;
		c3[p] += w30 * x0 + w31 * x1 + w32 * x2 + w33 * x3;
	}
}

/* c_r[p] += w[r] * b[p] for four rows r. */
INLINE void axpy4x1(float *restrict c0, float *restrict c1,
		    float *restrict c2, float *restrict c3,
		    const float *restrict b, float w0, float w1, float w2,
		    float w3, int P)
{
	int p;

	for (p = 0; p < P; p++) {
		c0[p] += w0 * b[p];
		c1[p] += w1 * b[p];
		c2[p] += w2 * b[p];
		c3[p] += w3 * b[p];
	}
}

INLINE void axpy(float *restrict c, const float *restrict b, float w, int P)
{
	int p;

	for (p = 0; p < P; p++)
		c[p] += w * b[p];
}

/* d[p] += a0 g0[p] + a1 g1[p] + a2 g2[p] + a3 g3[p] */
INLINE void axpy1x4(float *restrict d, const float *restrict g0,
		    const float *restrict g1, const float *restrict g2,
		    const float *restrict g3, float a0, float a1, float a2,
		    float a3, int P)
{
	int p;

	for (p = 0; p < P; p++)
		d[p] += a0 * g0[p] + a1 * g1[p] + a2 * g2[p] + a3 * g3[p];
}

/* s[r] = dot(g_r, b) for four rows (vectorized thanks to reassociation). */
INLINE void dot4(const float *restrict g0, const float *restrict g1,
		 const float *restrict g2, const float *restrict g3,
		 const float *restrict b, int P, float *restrict s)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int p;

	for (p = 0; p < P; p++) {
		s0 += g0[p] * b[p];
		s1 += g1[p] * b[p];
		s2 += g2[p] * b[p];
		s3 += g3[p] * b[p];
	}
	s[0] = s0;
	s[1] = s1;
	s[2] = s2;
	s[3] = s3;
}

INLINE float dot(const float *restrict a, const float *restrict b, int n)
{
	float s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* Four output rows and four k at a time: per vector of outputs, four B rows
 * and four C rows are loaded for sixteen multiply-adds. */
HOT void dlrt_hot_gemm_bias(const float *A, const float *B, const float *bias,
			    float *C, int M, int K, int P)
{
	int m, k, p, r, j, mr;
	float w[16];

	for (m = 0; m < M; m += mr) {
		float *c0 = C + (size_t)m * P;

		mr = M - m >= 4 ? 4 : 1;
		for (r = 0; r < mr; r++)
			for (p = 0; p < P; p++)
				c0[(size_t)r * P + p] = bias[m + r];
		if (mr == 1) {
			for (k = 0; k < K; k++)
				axpy(c0, B + (size_t)k * P, A[(size_t)m * K + k], P);
			continue;
		}
		for (k = 0; k + 4 <= K; k += 4) {
			const float *b0 = B + (size_t)k * P;

			for (r = 0; r < 4; r++)
				for (j = 0; j < 4; j++)
					w[r * 4 + j] = A[(size_t)(m + r) * K + k + j];
			axpy4x4(c0, c0 + P, c0 + 2 * P, c0 + 3 * P, b0, b0 + P,
				b0 + 2 * P, b0 + 3 * P, w, P);
		}
		for (; k < K; k++)
			axpy4x1(c0, c0 + P, c0 + 2 * P, c0 + 3 * P,
				B + (size_t)k * P, A[(size_t)m * K + k],
				A[(size_t)(m + 1) * K + k],
				A[(size_t)(m + 2) * K + k],
				A[(size_t)(m + 3) * K + k], P);
	}
}

HOT void dlrt_hot_gemm_tn(const float *A, const float *G, float *D, int M,
			  int K, int P)
{
	int m, k;

	for (k = 0; k < K; k++) {
		float *d = D + (size_t)k * P;

		memset(d, 0, sizeof(float) * P);
		for (m = 0; m + 4 <= M; m += 4) {
			const float *g0 = G + (size_t)m * P;

			axpy1x4(d, g0, g0 + P, g0 + 2 * P, g0 + 3 * P,
				A[(size_t)m * K + k], A[(size_t)(m + 1) * K + k],
				A[(size_t)(m + 2) * K + k],
				A[(size_t)(m + 3) * K + k], P);
		}
		for (; m < M; m++)
			axpy(d, G + (size_t)m * P, A[(size_t)m * K + k], P);
	}
}

HOT void dlrt_hot_gemm_nt_acc(const float *G, const float *B, float *dA,
			      float *db, int M, int K, int P)
{
	float s[4];
	int m, k, p;

	for (m = 0; m < M; m++) {
		const float *g = G + (size_t)m * P;
		float t = 0;

		for (p = 0; p < P; p++)
			t += g[p];
		db[m] += t;
	}
	/* Four gradient rows against one B row: B is read once per four
	 * dot products. */
	for (m = 0; m + 4 <= M; m += 4) {
		const float *g0 = G + (size_t)m * P;

		for (k = 0; k < K; k++) {
			dot4(g0, g0 + P, g0 + 2 * P, g0 + 3 * P,
			     B + (size_t)k * P, P, s);
			dA[(size_t)m * K + k] += s[0];
			dA[(size_t)(m + 1) * K + k] += s[1];
			dA[(size_t)(m + 2) * K + k] += s[2];
			dA[(size_t)(m + 3) * K + k] += s[3];
		}
	}
	for (; m < M; m++)
		for (k = 0; k < K; k++)
			dA[(size_t)m * K + k] += dot(G + (size_t)m * P,
						     B + (size_t)k * P, P);
}

/* Weight row outer, batch inner: a W row stays in L1 for the whole batch,
 * which is where batching pays off for the big dense layer. */
HOT void dlrt_hot_dense(const float *in, size_t n, int nin, const float *W,
			const float *bias, int nout, float *out)
{
	size_t b;
	int o;

	for (o = 0; o < nout; o++) {
		const float *w = W + (size_t)o * nin;

		for (b = 0; b < n; b++) {
			out[b * nout + o] = dot(w, in + b * nin, nin) + bias[o];
		}
	}
}

HOT void dlrt_hot_dense_back(const float *in, const float *g, const float *W,
			     int nin, int nout, float *dW, float *db, float *din)
{
	int o;

	if (din)
		memset(din, 0, sizeof(float) * nin);
	for (o = 0; o < nout; o++) {
		const float *w = W + (size_t)o * nin;
		float *dw = dW + (size_t)o * nin;
		float go = g[o];

		db[o] += go;
		if (go == 0)
			continue; /* ReLU zeroes many gradients */
		axpy(dw, in, go, nin);
		if (din)
			axpy(din, w, go, nin);
	}
}

HOT void dlrt_hot_sgd(float *w, float *v, float *g, size_t n, float lr,
		      float mu, float scale, float wd)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[i] = mu * v[i] - lr * (g[i] * scale + wd * w[i]);
		w[i] += v[i];
		g[i] = 0;
	}
}
