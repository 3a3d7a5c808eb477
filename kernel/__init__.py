"""The kernel layer: the papers' exact statements proved (or refuted) for every size in Coq.

``theories/`` holds one Coq theory per paper (logical prefix ``Verify``, listed in
``theories/_CoqProject``); :mod:`verify.kernel.driver` compiles them once per Coq version and source
hash into the user cache, reads ``Print Assumptions`` for every reported theorem, runs ``coqchk``,
and turns the results into :class:`~verify.evidence.Evidence` with status ``proved`` (a kernel-checked
theorem that is the statement) or ``refuted`` (a kernel-checked counterexample).  The catalogs
``catalog_<paper>.py`` say which theorem answers which claim variant.
"""
