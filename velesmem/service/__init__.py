"""Autostart: run the daemon under launchd, a Scheduled Task, systemd --user, or detached."""
