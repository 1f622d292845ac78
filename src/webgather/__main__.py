from webgather._entry import main

raise SystemExit(main())
