from webgather.cli import main

raise SystemExit(main())
