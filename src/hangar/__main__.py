from hangar.cli.main import main

raise SystemExit(main())
