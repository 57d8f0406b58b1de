"""Many nodes: drift across snapshots (`npudoctor compare`)."""
