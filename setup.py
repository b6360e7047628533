"""The installed packages (pyproject.toml holds the rest): the apps, and the checkout's folders that the
installed code reads, placed inside them: templates/ and static/ in config/ (config/settings.py looks there when
it runs without a checkout), the plugin's capture hook in cli/ (`threadmem capture`, cli/main.py)."""

from __future__ import annotations

from setuptools import find_packages, setup

APPS = ("config", "threadmem", "api", "console", "cli", "mcp_server", "oauth")
FOLDERS = {"config.templates": "templates", "config.static": "static", "cli.hook": "plugin/scripts"}

setup(
    packages=[*find_packages(include=[*APPS, *(f"{app}.*" for app in APPS)]), *FOLDERS],
    package_dir=FOLDERS,
)
