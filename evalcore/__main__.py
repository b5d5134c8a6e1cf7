"""``python -m evalcore`` runs the command line."""

from evalcore.cli import main

raise SystemExit(main())
