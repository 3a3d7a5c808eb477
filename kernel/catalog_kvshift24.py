"""Kernel statements for kvshift24 (Xu et al., arXiv 2411.19574 v2): Theorem 2 and KV-cache decoding.

The theorems live in ``theories/Kvshift24.v``.  Theorem 2 (Eq. 9, proof in Appendix B) is read at the last
position L with Definition 1's IH (Eq. 7) and KVSA of Eqs. 4-6 with Appendix B's a1 = 0, a2 = 1, b2 = 0,
identity projections and ALiBi slope m: key at s is Shift(K)_s = x_{s-1} (x_0 := 0), value b1 x_s, softmax
over s = 1..L of x_L . key_s / sigma - m(L - s).  Vectors are coordinate functions (every width d); the
repaired statement holds for every dot product linear in its second argument.

KV-cache decoding (Appendix F's inference path) is modelled as slot lists exactly as
``verify.constructions.kvshift24_pe`` builds them (``full_forward``, ``decode``); the raw-key cache is proved
equal for every size, and each failing policy gets a counterexample with exact closed forms.  Of the four
failing policies only mixed-key is the paper's own code (Appendix F's inference branch); unwritten-first, a
RoPE offset of zero and an off-by-one ALiBi distance are implementation hazards, not claims of the paper.
"""

from __future__ import annotations

from verify.kernel.spec import KernelStatement as S

#: kvshift24:theorem2 options the repaired theorem quantifies over: every m, sigma, L >= 3, width d and every
#: input (a token sequence or an embeddings file alike); not --alibi (another construction) nor --rope
_T2_ALL = ("m", "sigma", "L", "d", "Lmax", "sequence", "embeddings")
#: the counterexamples: a fixed witness refutes the universal claim at every m, sigma > 0 and size
_T2_REFUTE = ("m", "sigma", "L", "d", "Lmax")
#: kvshift24:decode: the raw-key theorem quantifies over every option that is not the policy
_DEC_ALL = ("fix", "rope", "m", "sigma", "sequence", "prefill", "embeddings", "Lmax", "L", "d")
#: the counterexamples are for Theorem 2's layer as written with RoPE after the shift (the defaults)
_DEC_REFUTE = ("m", "sigma", "sequence", "prefill", "embeddings", "Lmax", "L", "d")

_IH = "IH(x) = sum_{s=2}^{L-1} softmax_s(x_L . x_{s-1} / sigma - m(L - s)) x_s (Definition 1)"

_EXISTS_READING = (
    "Theorem 2 read as the existence statement it is (Sec. 3.1, Eq. 9: 'There exists a one-layer single-head KV "
    "shifting attention KVSA, with D = d, such that IH = KVSA'): for every width D >= 1, every alpha1, alpha2, beta1, "
    "beta2, every D x D matrix W_Q, W_K, W_V, W_O, every score scale and every additive bias of the last row (ALiBi "
    "at any slope, or none), and every m and sigma of IH, the layer's output at the last position differs from IH on "
    "one of the inputs (e_0, 0, 0), (0, e_0, 0), (0, 0, e_0); only the positivity of the softmax weights is used.")
#: the existence theorem covers every option but RoPE (a rotation is not in Eqs. 4-6)
_EXISTS_COVERS = ("m", "sigma", "L", "d", "Lmax", "sequence", "embeddings", "alibi")

STATEMENTS = (
    S(claim="kvshift24:theorem2", variant="mask+scale", theory="Kvshift24", theorem="theorem2_mask_scale",
      role="proves", covers=_T2_ALL,
      reading=("KVSA with the summands s = 1 and s = L dropped from its softmax and b1 = 1 equals " + _IH + " "
               "coordinate by coordinate, for every L >= 3, every input sequence x_1..x_L of vectors (coordinate "
               "functions, any width), every dot product linear in its second argument (every bilinear form, the "
               "usual dot product of R^d included: theorem2_mask_scale_coords) and every real m and sigma; the "
               "proof is term by term: for 2 <= s <= L-1 the score x_L . (0 x_s + 1 x_{s-1}) / sigma - m(L - s) is "
               "IH's and the value 1 x_s + 0 x_{s-1} is x_s.")),
    S(claim="kvshift24:theorem2", variant="none", theory="Kvshift24", theorem="theorem2_as_written_refuted",
      role="refutes", covers=_T2_REFUTE,
      reading=("As written (every causal key s = 1..L, b1 = 1/sigma): for every width d, every A, B in R^d with "
               "A.A = 1 and A.B = 0, every m and every sigma > 0, on x = (A, B, A) IH = B has A component 0 while "
               "KVSA's A component is (e^{-2m} + 1) / (sigma (e^{-2m} + e^{1/sigma - m} + 1)) > 0 (the s = 1 term, "
               "key 0 and value x_1 / sigma, and the s = 3 term, key x_2 and value x_3 / sigma), so KVSA <> IH.")),
    S(claim="kvshift24:theorem2", variant="mask", theory="Kvshift24", theorem="theorem2_mask_refuted",
      role="refutes", covers=("m", "L", "d", "Lmax"),
      reading=("With s = 1 and s = L masked but b1 = 1/sigma kept, KVSA = IH / sigma for every input "
               "(theorem2_mask_is_ih_over_sigma), so the statement fails for sigma != 1: for every width d, every "
               "A, B in R^d with B.B = 1, every m and every sigma > 0 with sigma != 1, on x = (A, B, A) IH = B and "
               "KVSA = B / sigma, so KVSA <> IH. At sigma = 1 the mask alone suffices (the theorem does not cover "
               "a changed --sigma).")),
    S(claim="kvshift24:decode", variant="raw-key,correct,correct", theory="Kvshift24",
      theorem="decode_raw_key_slots", role="proves", covers=_DEC_ALL,
      reading=("With the raw key and value kept as the shift state between calls, each decoded token rotated at "
               "its absolute position and the ALiBi distance measured from the query position t: for every RoPE "
               "placement (none, before or after the shift), ALiBi on or off, every variant of the layer (which of "
               "s = 1 and s = t are masked), every a1, a2, b1, b2, every length L, every prefill 1 <= k < L and "
               "every decoded position k < t <= L, the query at t sees exactly the full pass's slots (keys with "
               "their rotations, values, ALiBi distances, flags); hence (decode_raw_key_correct) the same output "
               "for every input, sigma, m and any function in place of exp.")),
    S(claim="kvshift24:decode", variant="raw-key,correct,correct", theory="Kvshift24",
      theorem="decode_raw_key_correct", role="proves", covers=_DEC_ALL,
      reading=("The output form: under the same quantifiers, the decoded query at t and the full pass's query at t "
               "give the same output coefficients, sum over the numerator slots of value coefficient times "
               "E(x_t . key / sigma - m * distance) over the normaliser's sum, for every table of products "
               "x_t^T R_delta x_p (every input, every RoPE rotation), every sigma and m and every function E in "
               "place of exp.")),
    S(claim="kvshift24:decode", variant="mixed-key,correct,correct", theory="Kvshift24",
      theorem="decode_mixed_key_refuted", role="refutes", covers=_DEC_REFUTE,
      hypothesis="one input of orthonormal symbols, one per RoPE plane (a counterexample)",
      tag="orthonormal symbols",
      reading=("Appendix F's inference branch (after the prefill call the state is the shifted key k[:, -1:]), "
               "Theorem 2's layer as written, RoPE after the shift, ALiBi on: at L = 3, prefill 2, t = 3 the first "
               "decoded token mixes twice, slot 3's key is x_1 where the full pass has x_2; on x = (A, B, B) "
               "(orthonormal symbols, one per RoPE plane, any frequencies) the A coefficient is "
               "e^{-2m} / (sigma (e^{-2m} + e^{-m} + 1)) decoded against e^{-2m} / (sigma (e^{-2m} + e^{-m} + "
               "e^{1/sigma})) in the full pass: different for every m and sigma > 0.")),
    S(claim="kvshift24:decode", variant="unwritten-first,correct,correct", theory="Kvshift24",
      theorem="decode_unwritten_first_refuted", role="refutes", covers=_DEC_REFUTE,
      reading=("hazard: the first one-token call does not write the shift state (not the paper's code). Theorem "
               "2's layer as written, RoPE after the shift, ALiBi on: at L = 3, prefill 1, t = 3 slot 3's key is "
               "x_1 where the full pass has x_2; on x = (A, B, B) the A coefficient is e^{-2m} / (sigma (e^{-2m} + "
               "e^{-m} + 1)) against e^{-2m} / (sigma (e^{-2m} + e^{-m} + e^{1/sigma})): different for every m and "
               "sigma > 0.")),
    S(claim="kvshift24:decode", variant="raw-key,zero,correct", theory="Kvshift24",
      theorem="decode_rope_offset_zero_refuted", role="refutes", covers=_DEC_REFUTE,
      reading=("hazard: a one-token call rotating the new token at position 0 (a forward with seqlen_offset = 0 "
               "reused for decoding; Appendix F's forward is written for the full pass). Theorem 2's layer as "
               "written, RoPE after the shift, ALiBi on: at L = 3, prefill 1, t = 3 slot 2 (key x_1) is seen at "
               "relative rotation 0 instead of -1; on x = (A, B, A) with the first symbol's RoPE frequency 1 "
               "(base^0, every base) the B coefficient is e^{1/sigma - m} / (e^{-2m} + 1 + e^{1/sigma - m}) / sigma "
               "decoded against the same with cos(1)/sigma - m in place of 1/sigma - m: different for every m and "
               "sigma > 0 (cos 1 < 1, checked by interval arithmetic).")),
    S(claim="kvshift24:decode", variant="raw-key,correct,off-by-one", theory="Kvshift24",
      theorem="decode_alibi_off_by_one_refuted", role="refutes", covers=tuple(o for o in _DEC_REFUTE if o != "m"),
      reading=("hazard: the ALiBi query position taken as t - 1, the cache length before the append (not the "
               "paper's code). Theorem 2's layer as written, RoPE after the shift, ALiBi slope m > 0: at L = 3, "
               "prefill 1, t = 2 the distances of slots 1 and 2 swap (1, 0 become 0, 1); on x = (A, B, A) the A "
               "coefficient is 1 / (sigma (e^{-m} + 1)) decoded against e^{-m} / (sigma (e^{-m} + 1)): different "
               "for every m > 0 and sigma > 0 (m = 0 switches ALiBi off; with s = t masked, --fix mask or "
               "mask+scale, the shift is uniform and harmless, not covered here).")),
    S(claim="kvshift24:theorem2", variant="none", theory="Kvshift24Exists", theorem="theorem2_no_eq46_layer_equals_ih",
      role="refutes", covers=_EXISTS_COVERS, part="existence", reading=_EXISTS_READING),
    S(claim="kvshift24:theorem2", variant="mask", theory="Kvshift24Exists", theorem="theorem2_no_eq46_layer_equals_ih",
      role="refutes", covers=_EXISTS_COVERS, part="existence", reading=_EXISTS_READING),
    S(claim="kvshift24:theorem2", variant="mask+scale", theory="Kvshift24Exists", theorem="theorem2_no_eq46_layer_equals_ih",
      role="refutes", covers=_EXISTS_COVERS, part="existence", reading=_EXISTS_READING),
)
