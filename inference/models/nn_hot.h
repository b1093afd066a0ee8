/* nn_hot.h - the few loops where the CNN spends its time.
 *
 * Kept in their own file so module.mk can compile just them with the
 * vectorizer fully on (-O3, reassociation for the dot products) and, on
 * x86-64 with GCC, as function clones for AVX2+FMA picked at load time.
 * The clone choice changes float rounding, so weights trained on a machine
 * without AVX2 differ in the last bits (still deterministic per machine).
 */
#ifndef DLRT_NN_HOT_H
#define DLRT_NN_HOT_H

#include <stddef.h>

/* C[m][p] = bias[m] + sum_k A[m][k] * B[k][p]   (A: M x K, B: K x P) */
void dlrt_hot_gemm_bias(const float *A, const float *B, const float *bias,
			float *C, int M, int K, int P);

/* D[k][p] = sum_m A[m][k] * G[m][p]   (A: M x K, G: M x P, D: K x P) */
void dlrt_hot_gemm_tn(const float *A, const float *G, float *D, int M, int K,
		      int P);

/* dA[m][k] += sum_p G[m][p] * B[k][p];  db[m] += sum_p G[m][p] */
void dlrt_hot_gemm_nt_acc(const float *G, const float *B, float *dA,
			  float *db, int M, int K, int P);

/* out[b][o] = bias[o] + sum_i W[o][i] * in[b][i] */
void dlrt_hot_dense(const float *in, size_t n, int nin, const float *W,
		    const float *bias, int nout, float *out);

/* Backward of one dense sample: dW[o][i] += g[o] * in[i]; db[o] += g[o];
 * din[i] = sum_o W[o][i] * g[o] (din may be NULL for the first layer). */
void dlrt_hot_dense_back(const float *in, const float *g, const float *W,
			 int nin, int nout, float *dW, float *db, float *din);

/* w += v = mu * v - lr * (g * scale + wd * w); g = 0.  (SGD with momentum) */
void dlrt_hot_sgd(float *w, float *v, float *g, size_t n, float lr, float mu,
		  float scale, float wd);

#endif
