"""Kernel statements for ws24 (Wang & Sato, arXiv 2412.11459 v2): Theorem 2 / Eq. 13, Eq. 14, Prop. 4.

The theorems live in ``theories/Ws24.v``, and the read-score readings of Theorem 2 and Eq. 14 for near-orthogonal
embeddings in ``theories/Ws24Near.v``.  Setting: vectors are coordinate functions of R^d (every
d), the key matrices are sums of outer products, every score a bilinear form u^T W v; Assumption 1 is
idealised as an exact orthonormal family (a hypothesis of each theorem), and each refutation also
proves that such families exist for every vocabulary size V (the standard basis), so it is not vacuous.
"""

from __future__ import annotations

from verify.kernel.spec import KernelStatement as S

#: every V and d, every position t; N only sizes the numeric layer's one-step estimate (the matrix is taken as
#: given).  Not eps, except for the read-score readings of Theorem 2 and Eq. 14 (Ws24Near.v, every eps): the other
#: theorems are the exact orthonormal idealisation (eps = 0), not the eps-near one.
_COVERS = ("Vmax", "d", "V", "T", "N", "convention")  # the convention: ws24's kernel wrapper says which applies

_FAMILY13 = ("for every vocabulary size V, every dimension d, every set of trigger tokens Q, every chi and every "
             "family w_E(1..V), r_{-1} orthonormal in R^d (such families exist for every V), with Eq. 13's remainder "
             "(W^1_K)' taken as 0, the idealisation the symbolic layer uses")
_FAMILY14 = ("for every V, d, every psi, every d x d matrix Phi_1 and every w_E(1..V) such that w_E(1..V), "
             "Phi_1 w_E(1..V) is one orthonormal family of R^d (such families exist for every V), with Eq. 14's "
             "remainder taken as 0")

#: the hypotheses, printed in every kernel line
_ORTHO = ("an exactly orthonormal family (eps = 0); a counterexample for every eps, an orthonormal family being "
          "eps-near-orthogonal for every eps >= 0")
_NEAR = ("near-orthogonal embeddings as Assumption 1 states them: squared norms within eps of 1, inner products of "
         "distinct members at most eps in absolute value, every eps >= 0")
STATEMENTS = (
    S(claim="ws24:theorem2", variant="as-written", theory="Ws24", theorem="theorem2_as_written_refuted",
      hypothesis=_ORTHO, tag="orthonormal family, eps = 0",
      role="refutes",
      covers=_COVERS,
      reading=(f"Eq. 13 as written, W^1_K = sum_{{k in Q}} chi(k) w_E(k) r_{{-1}}^T: {_FAMILY13}, the displayed "
               "association r_{-1}^T W^1_K w_E(v) is 0 for every token v, so for every v in Q with chi(v) != 0 it "
               "is not chi(v) as Theorem 2 states.")),
    S(claim="ws24:theorem2", variant="transposed", theory="Ws24", theorem="theorem2_transposed_refuted",
      hypothesis=_ORTHO, tag="orthonormal family, eps = 0",
      role="refutes",
      covers=_COVERS,
      reading=(f"W^1_K transposed, sum_{{k in Q}} chi(k) r_{{-1}} w_E(k)^T: {_FAMILY13}, for every v in Q the "
               "display r_{-1}^T W^1_K w_E(v) = chi(v), but the model's own score w_E(v)^T W^1_K r_{-1} "
               "(query^T W_K key) is 0 and so is the layer-1 score w_E(v)^T W^1_K (w_E(u) + r_{(t-1)-t}) at "
               "(t, t-1) for every position t and token u: no previous-token head is left (the model's score is "
               "not chi(v) wherever chi(v) != 0).")),
    S(claim="ws24:theorem2", variant="read-score", theory="Ws24Near", theorem="theorem2_read_score_near",
      hypothesis=_NEAR, tag="near-orthogonal, every eps",
      role="proves",
      covers=(*_COVERS, "eps"),
      reading=("Eq. 13 kept and the display read as query^T W_K key, for near-orthogonal embeddings (Assumption 1 "
               "as the paper states it, not idealised): for every V, d, eps >= 0, every set of trigger tokens Q, "
               "every chi with |chi(k)| <= M on Q and every family w_E(1..V), r_{-1} of R^d whose squared norms lie "
               "within eps of 1 and whose distinct members have |<x, y>| <= eps, with Eq. 13's remainder "
               "(W^1_K)' taken as 0: for every v in Q the model's own previous-token score w_E(v)^T W^1_K r_{-1} "
               "lies within f = M eps (V + 1 + V eps) of chi(v), the layer-1 score at (t, t-1) within "
               "M eps (V + 2 + 2 V eps) of chi(v) for every position t and token u, and the display as written, "
               "r_{-1}^T W^1_K w_E(v), is at most g = V M eps^2 in absolute value; so where |chi(v)| = M > 0 the "
               "model's score exceeds the as-written display in absolute value for every eps < eps*(V) = "
               "(sqrt((V + 1)^2 + 8 V) - (V + 1)) / (4 V) (0.0950 at V = 8, 0.0149 at V = 64). At eps = 0 "
               "(an orthonormal family) the score is chi(v) exactly (Ws24Near.theorem2_read_score_near_at_0).")),
    S(claim="ws24:eq14", variant="as-written", theory="Ws24", theorem="eq14_as_written_refuted",
      hypothesis=_ORTHO, tag="orthonormal family, eps = 0",
      role="refutes",
      covers=_COVERS,
      reading=(f"Eq. 14 as written, W^2_K = sum_k psi(k) w_E(k) (Phi_1 w_E(k))^T: {_FAMILY14}, the proof's score "
               "(Phi_1 w_E(z_s))^T W^2_K w_E(z_T) is 0 for all tokens z_s, z_T, so at z_s = z_T with "
               "psi(z_T) != 0 it is not psi(z_T)[z_s = z_T].")),
    S(claim="ws24:eq14", variant="transposed", theory="Ws24", theorem="eq14_transposed_refuted",
      hypothesis=_ORTHO, tag="orthonormal family, eps = 0",
      role="refutes",
      covers=_COVERS,
      reading=(f"W^2_K transposed, sum_k psi(k) (Phi_1 w_E(k)) w_E(k)^T: {_FAMILY14}, the display "
               "(Phi_1 w_E(z_s))^T W^2_K w_E(z_T) = psi(z_T)[z_s = z_T], but the model's own induction score "
               "w_E(z_T)^T W^2_K Phi_1 w_E(z_s) is 0 for every pair (not psi(z_T) at z_s = z_T where "
               "psi(z_T) != 0).")),
    S(claim="ws24:eq14", variant="read-score", theory="Ws24Near", theorem="eq14_read_score_near",
      hypothesis=_NEAR, tag="near-orthogonal, every eps",
      role="proves",
      covers=(*_COVERS, "eps"),
      reading=("Eq. 14 kept and the score read as query^T W_K key, for near-orthogonal embeddings (Assumption 1 "
               "as the paper states it, not idealised): for every V, d, eps >= 0, every psi with |psi| <= M, every "
               "d x d matrix Phi_1 and every w_E(1..V) such that w_E(1..V), Phi_1 w_E(1..V) have squared norms "
               "within eps of 1 and |<x, y>| <= eps for distinct members, with Eq. 14's remainder taken as 0: for "
               "all tokens z_s, z_T in 1..V the model's own layer-2 score w_E(z_T)^T W^2_K Phi_1 w_E(z_s) lies "
               "within M eps (2 + V eps) of psi(z_T)[z_s = z_T], and the display as written "
               "(Phi_1 w_E(z_s))^T W^2_K w_E(z_T) is at most V M eps^2 in absolute value; so where |psi(z_T)| = M > "
               "0 the model's score at z_s = z_T exceeds the as-written display for every eps < eps*(V) = "
               "(sqrt(1 + 2V) - 1) / (2V) (0.217 at V = 6, 0.0809 at V = 64). At eps = 0 (an orthonormal family, "
               "Ws24.eq14_read_score) the score is psi(z_T)[z_s = z_T] exactly.")),
    S(claim="ws24:prop4", variant="", theory="Ws24", theorem="prop4", hypothesis="none (a softmax identity: no embedding enters)",
      tag="no embedding hypothesis",
      role="proves",
      covers=("d", "V", "T"),
      reading=("For every number t >= 1 of visible keys and every position p < t of the previous token, the "
               "softmax weight exp(s_p) / sum_{i<t} exp(s_i) with score s = 1 on key p and 0 on the other t - 1 "
               "keys is e / (t + e - 1).")),
)
