from benchmarks.speed import main

raise SystemExit(main())
