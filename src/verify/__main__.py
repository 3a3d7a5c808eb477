from verify.proofs.cli import main

raise SystemExit(main())
