"""Kernel statements that need analysis (sin, cos, exp, ln and Coq-Interval): pr26 Prop. 3 and kvshift24
Theorems 3 and 1.

The theorems live in ``theories/Pr26Interval.v`` (pr26, Proposition 3: the sinusoidal kernel and
theta_min = 10000^(-15/16)) and ``theories/Kvshift24Analytic.v`` (Xu et al., arXiv 2411.19574 v2,
Theorem 3, Eq. 10, Table 5, Appendix C; Theorem 1, Eq. 8, Appendix A).  Coq-Interval proves the numeric facts; every statement
holds for every size it names (every integer delta in range, every T >= 4 and every input), never by
enumerating cases.  Coq-Interval's computations rest on the specifications of Coq's primitive
63-bit integers (``Uint63``), listed by ``Print Assumptions`` beside the axioms of the reals.
"""

from __future__ import annotations

from verify.kernel.spec import KernelStatement as S

#: pr26:prop3: the theorem is at the paper's L = 17665; the other options only steer the numeric fit
_P3_COVERS = ("chunk", "lr", "steps", "weight-decay")
#: kvshift24:theorem3: every vocabulary size T >= 4 (the option's minimum) and any number of sampled sequences
_T3_COVERS = ("T", "N")

#: kvshift24:theorem1: every p >= 0 (so every --pmax) and every width d (the causal witness: every d >= 2, the minimum)
_T1_COVERS = ("pmax", "d")

_T1_CONSTRUCTION = ("layer 1 (zero query/key, ALiBi slope p, value into the second half, residual) gives y_s = "
                    "sum_tau softmax_tau(-p(top - tau)) x_tau; layer 2 (no residual, W_O = (I, 0), slope m) gives "
                    "TF(x) = sum_s softmax_s(x_L . y_s / sigma - m(L - s)) x_s; IH(x) = sum_{s=2}^{L-1} "
                    "softmax_s(x_L . x_{s-1} / sigma - m(L - s)) x_s (Definition 1)")

_T3_SETTING = ("one layer of KV shifting attention (K^ = alpha1 x_s + alpha2 x_{s-1}, V^ = beta1 x_s + beta2 x_{s-1}, "
               "x_0 = 0; identity projections, unscaled scores, no PE, residual, MLP or normalisation), tied "
               "orthonormal embeddings (inner product 1 on equal tokens, 0 otherwise: the d -> infinity limit the "
               "numeric layer evaluates), x_1..x_T a permutation of the vocabulary 0..T-1, x_{T+1} = x_i with "
               "2 <= i <= T-2, the loss -log softmax at the last position against x_{i+1}")

_T3_IDEAL = ("tied orthonormal embeddings, the d -> infinity limit of the paper's N(0, I/d) draws (an idealisation: "
             "the step from the draws to it is argued, not proved)")
STATEMENTS = (
    S(claim="pr26:prop3", variant="", theory="Pr26Interval", theorem="prop3_copy_alpha_one",
      role="proves", covers=_P3_COVERS,
      reading=("With theta_min = 10000^(-15/16) and the sinusoidal kernel W[sin_15, cos_15] = 1, "
               "W[cos_15, sin_15] = -1 (logit(i, j) = phi(i)^T W phi(j) = sin((i - j) theta_min), "
               "logit_is_sin): for every integer 0 <= delta <= 17665 with delta != 8833, "
               "sin(delta theta_min) < sin(8833 theta_min) (prop3_unique_maximiser; Coq-Interval proves "
               "8833 theta_min < pi/2 < 8833 theta_min + theta_min/2 and 17665 theta_min < pi, then "
               "sin x = cos(|x - pi/2|) and cos strictly decreasing on [0, pi] give every delta); "
               "sin(delta theta_min) is strictly increasing on the integers 0..8833 (prop3_increasing_up_to); "
               "ceil(L/2) = 8833 exactly for L = 17665, 17666 (prop3_copy_offset_iff); hence at L = 17665 every "
               "copy row i in [8833, 17664] has its target i - 8833 as the strict argmax of its logits over the "
               "keys 0..i, so alpha_L = 1.")),
    S(claim="kvshift24:theorem3", variant="appendix-c", theory="Kvshift24Analytic", theorem="theorem3_appendix_c",
      hypothesis=_T3_IDEAL, tag="orthonormal, d -> infinity",
      idealised=True,
      role="proves", covers=_T3_COVERS,
      reading=("For every T >= 4, every input and all real alpha1, alpha2, beta1, beta2 in Theorem 3's setting ("
               + _T3_SETTING + "): the loss equals Eq. 10 read with Appendix C's derivation, "
               "-log(e^{c_t} / (e^{c_t} + 2 e^{c_n} + e^{c_q} + (T - 4) e^{c_o})) with S = e^{alpha2} + "
               "2 e^{alpha1} + T - 2, a1 = e^{alpha1}/S, a2 = e^{alpha2}/S, c_t = a2 beta1 + beta2/S, "
               "c_n = beta1/S + beta2 a1 (the x_{i-1} and x_T logits), c_q = 2 a1 beta1 + a2 beta2, "
               "c_o = (beta1 + beta2)/S. Not in the Coq statement: the step from N(0, I/d) embeddings to the "
               "orthonormal idealisation (inner products -> 0 or 1 as d -> infinity, the loss continuous in them), "
               "which is argued, and the minimiser (0, 1).")),
    S(claim="kvshift24:theorem3", variant="as-printed", theory="Kvshift24Analytic",
      theorem="theorem3_as_printed_refuted", hypothesis=_T3_IDEAL, tag="orthonormal, d -> infinity", role="refutes", covers=_T3_COVERS,
      reading=("For every T >= 4, every input in Theorem 3's setting (" + _T3_SETTING + ") and all real "
               "parameters with beta2 != 0 and alpha1 != alpha2 (the paper's (alpha1, beta1) = (0, 0) with "
               "alpha2 = 1 - alpha1, beta2 = 1 - beta1 among them), the loss is not Eq. 10 as printed "
               "(c_n = beta1/S + beta2 a2, as Table 5): the loss is the Appendix C form, and the two differ "
               "exactly when beta2 a1 != beta2 a2. At T = 16 and (alpha1, beta1) = (0, 0), Eq. 10 as printed "
               "exceeds the loss by a number in (0.0118, 0.0119) (theorem3_as_printed_refuted_T16, Coq-Interval).")),
    S(claim="kvshift24:theorem1", variant="as-displayed", theory="Kvshift24Analytic", theorem="theorem1_as_displayed",
      role="proves", covers=_T1_COVERS,
      reading=("With Appendix A's displayed key ranges (layer 1 over tau = 1..s-1, top = s-1; layer 2 over "
               "s = 2..L-1; " + _T1_CONSTRUCTION + "): for every width d, every L >= 3, every input x_1..x_L in "
               "R^d with |x_s[k]| <= B and every x_L . x_t within Gd of every x_L . x_t' (Gd = 1 for orthonormal "
               "tokens, Gd <= 2 B |x_L|_1 always), every p >= 0, every m and every sigma > 0, on every coordinate "
               "k: |TF(x)[k] - IH(x)[k]| <= B (e^{2 Gd e^{-p} / sigma} - 1) (theorem1_as_displayed_bound) "
               "<= C e^{-p} with C = B (2 Gd / sigma) e^{2 Gd / sigma}, no L in it (C = 2 e^2 ~ 14.8 for "
               "orthonormal tokens and sigma = 1; the numeric layer's fitted constant on its random inputs is "
               "far smaller). Steps: layer 1's off-target mass at s is r G/(1 + r G) <= r = e^{-p} (G a geometric "
               "sum, G (1 - r) <= 1), so x_L . y_s moves from x_L . x_{s-1} by at most Gd e^{-p}; a softmax "
               "average of values bounded by B moves by at most B (e^{2 Delta} - 1) when its scores move by "
               "Delta.")),
    S(claim="kvshift24:theorem1", variant="causal", theory="Kvshift24Analytic", theorem="theorem1_causal_error",
      role="refutes", covers=_T1_COVERS,
      reading=("With standard causal masks (layer 1 over tau = 1..s with bias -p(s - tau); layer 2 over s = 1..L; "
               + _T1_CONSTRUCTION + "): on x = (A, B, A), L = 3, A = e_0 and B = e_1 (coordinates 0 and 1) in R^d, for "
               "every width d >= 2, every p >= 0, every m >= 0 and every sigma > 0, IH(x) = B while TF(x)'s B "
               "coordinate is < 1/2, so |TF(x) - IH(x)|_inf > 1/2 for every p (theorem1_causal_refuted): the "
               "causal key y_3 = (e^{-2p} A + e^{-p} B + A)/(1 + e^{-p} + e^{-2p}) scores at least 2/3 against "
               "x_3 = A, y_2 = (e^{-p} A + B)/(1 + e^{-p}) at most 1/2, so the s = 3 term (value A) outweighs "
               "the s = 2 term (value B).")),
)
