from benchmarks.photos import main

raise SystemExit(main())
