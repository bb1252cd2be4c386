from benchmarks.classifier import main

raise SystemExit(main())
