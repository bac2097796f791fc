from ttdash.cli import main

raise SystemExit(main())
