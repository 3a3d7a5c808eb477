"""Kernel statements for pr26 (A Positional Realizability Theory of Length Generalization in Single-Head
Attention, TMLR 2026): Prop. 1, Theorem 1, Theorem 2.

The theorems live in ``theories/Pr26.v``; positions are 0-indexed as in the code (paper rows = code rows
+ 1); row i attends to t when t is the strict maximiser of its logits over the causal window j = 0..i
(a tie fails).  The feature maps and tasks are those of :mod:`verify.constructions.pe` (reconstructed
from a summary of the paper: no equation number can be cited).
"""

from __future__ import annotations

from verify.kernel.spec import KernelStatement as S

STATEMENTS = (
    S(claim="pr26:prop1", variant="", theory="Pr26", theorem="prop1_statement",
      role="proves", covers=("N", "n"),
      reading=("(i) The core lemma: a logit row affine in the key j on the window 0..i has no strict interior "
               "maximiser; (ii) with phi(i) = [1, i] and logit(i, j) = phi(i)^T W phi(j), for every W in R^{2x2} no "
               "row i >= 2 (paper row >= 3) has its target i - 1 as strict masked argmax, so for every length "
               "n >= 3 and every W, prev (rows 1..n-1, target i - 1) is unrealizable; (iii) the same for ALiBi "
               "k(delta) = a - m delta, every a, m; (iv) canonical ALiBi (m > 0) hits no prev row at all "
               "(alpha_L = 0). A positive control in the same theory proves prev realizable at every n with the "
               "quadratic features [1, i, i^2].")),
    S(claim="pr26:theorem1", variant="", theory="Pr26", theorem="theorem1",
      role="proves", covers=("L0", "L"),
      reading=("For every position-indexed feature map phi (independent of L), every W, feature dimension r and "
               "L0 <= L: (i) the top-left L0 x L0 block of P_L(W) = Phi_L W Phi_L^T is P_L0(W) and every causally "
               "masked row i < L0 is the same at both lengths; (ii) for every length-stable target t(i) <= i "
               "(prev, skip-K, attend-first) and first query row i0: if W solves rows [i0, L0) at L0 with margin "
               "g0 and the new rows [max(i0, L0), L) at L with margin gL, it solves every row [i0, L) at L with "
               "margin min(g0, gL), so with g0, gL > 0 every row attends to its target; (iii) (i) and (ii) for "
               "every relative kernel k (logit k(i - j)).")),
    S(claim="pr26:theorem2", variant="", theory="Pr26", theorem="theorem2",
      role="proves",
      # every kernel and length: the fit settings only choose which kernel the numeric layer inspects
      covers=("K", "L0", "lr", "steps", "weight-decay", "selection"),
      reading=("For every relative kernel k : nat -> R with a strict unique global maximiser delta* "
               "(k(delta*) > k(d) for every d != delta*): (i) every row i >= delta* has strict masked argmax "
               "j = i - delta*, so a kernel peaked at K (one exists for every K) realizes prev (K = 1) and skip-K on "
               "every row i >= K at every length; (ii) reverse (rows [ceil(L/2), L), target L-1-i): at most one deep "
               "row of a length is hit, and at every L >= max(2, 2 delta*) at most 1 of the floor(L/2) query rows "
               "is hit, so the fraction missed is >= 1 - 1/floor(L/2); (iii) copy (offset ceil(L/2)): a hit deep "
               "row forces ceil(L/2) = delta*, so of two lengths with different ceil(L/2) at most one has a deep "
               "row hit, and at every L >= 2 with L > 2 delta* no query row is hit (fraction missed 1).")),
)
