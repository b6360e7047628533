"""What names a resource, and what reads as an error: the argument keys and patterns ``catalogue.py`` scans with."""

from __future__ import annotations

import re

COMMAND_KEYS = {"command", "commands", "cmd", "script", "shell", "bash", "cmdline", "command_line"}
PATH_KEYS = {
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "file_path",
    "filepath",
    "file_name",
    "dir",
    "dirname",
    "directory",
    "cwd",
    "workdir",
    "working_directory",
    "source",
    "src",
    "dest",
    "destination",
    "target_file",
    "notebook_path",
    "old_path",
    "new_path",
}
HOST_KEYS = {"host", "hostname", "hosts", "server", "remote", "remote_host", "address", "ip", "ip_address", "node"}
IDENTIFIER_KEYS = {
    "id",
    "name",
    "repo",
    "repository",
    "branch",
    "table",
    "database",
    "db",
    "schema",
    "bucket",
    "container",
    "service",
    "namespace",
    "cluster",
    "image",
    "project",
    "issue",
    "ticket",
    "pr",
    "pull_request",
    "commit",
    "sha",
    "queue",
    "topic",
    "username",
    "user",
    "account",
    "instance",
    "vm",
    "pod",
    "deployment",
    "job",
    "region",
    "zone",
    "index",
    "collection",
}
# Values under these keys are never listed: a catalogue must not spread credentials.
SECRET_WORDS = ("secret", "password", "passwd", "token", "api_key", "apikey", "credential", "auth", "private_key")

URL_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s<>\"'`)\]|]+")
# The password of ``scheme://user:password@host`` is never repeated in a summary.
URL_PASSWORD_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]+):[^/@\s]+@")
WINDOWS_PATH_RE = re.compile(r"(?<![\w\\])(?:[A-Za-z]:\\|\\\\[\w.$-]+\\)(?:[^\\/:*?\"<>|\s]+\\)*[^\\/:*?\"<>|\s]*")
USER_HOST_RE = re.compile(
    r"(?<![\w.@-])[A-Za-z0-9._-]+@(?=[A-Za-z0-9.-]*[A-Za-z])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::\d{1,5})?"
)
HOME_PATH_RE = re.compile(r"(?<![\w/~.-])~[\w.-]*(?:/[\w.@+,=-]+)+/?")
UNIX_PATH_RE = re.compile(r"(?<![\w.~/-])(?:\.{1,2})?(?:/[\w.@+,=-]+)+/?")
RELATIVE_PATH_RE = re.compile(r"(?<![\w./~:@-])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,10}\b")
IPV4_RE = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])")
HOSTNAME_RE = re.compile(
    r"(?<![\w.@/-])(?:localhost|(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
    r"(?:com|net|org|io|dev|app|cloud|ai|co|us|uk|de|eu|fr|nl|internal|local|lan|corp|intra|localdomain|test|"
    r"example|svc|cluster))(?::\d{1,5})?(?![\w.-])",
    re.IGNORECASE,
)
# A single-segment absolute path is a resource only under a well-known root
# or with an extension; otherwise "/s" or "/2" in prose would count.
KNOWN_ROOTS = {
    "etc",
    "var",
    "tmp",
    "home",
    "usr",
    "opt",
    "srv",
    "root",
    "dev",
    "proc",
    "mnt",
    "bin",
    "lib",
    "data",
    "workspace",
    "work",
    "app",
    "Users",
    "Volumes",
}
TRAILING_PUNCTUATION = ".,;:!?'\"`)]}>"

ERROR_START_RE = re.compile(
    r"^\s*(?:\[?error\]?|fatal|traceback|exception|failed|failure|panic|denied|refused|cannot|can't|"
    r"could not|unable to|no such|permission denied|command not found|usage:|e:)\b",
    re.IGNORECASE,
)
ERROR_ANYWHERE_RE = re.compile(
    r"no such file or directory|permission denied|command not found|connection refused|connection timed out|"
    r"could not resolve host|name or service not known|exit (?:code|status)[:= ]*[1-9]\d*|"
    r"returned non-zero exit status|\bnon-zero exit\b|\bfatal:|\berror:|traceback \(most recent call last\)",
    re.IGNORECASE,
)
