# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0
"""What the modules share: running rdma-cli, reading its JSON, turning its exit codes into
failure messages and its change list into Ansible's diff.

Everything but run_cli() is pure (no Ansible import), so the unit tests run it without a
controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# rdma-cli's exit codes (its man page): what each means, as a failure message begins it.
EXIT_MEANINGS = {
    1: ("failed", "rdma-managerd reported a failure"),
    2: ("invalid", "the input was refused (bad usage or an invalid state document)"),
    3: ("not-authorized", "not authorized (polkit refused the change)"),
    4: ("not-found", "not found"),
    5: ("no-daemon", "rdma-managerd is not running or not on the bus"),
    6: ("rolled-back", "the change was rolled back"),
}

# `rdma-cli diff` exits 10 when there are changes: not a failure.
DIFF_CHANGES_EXIST = 10

CHANGE_FIELDS = ("path", "op", "current", "wanted", "action")

# What the daemon answers when there is nothing pending to confirm or roll back.
NO_PENDING = "/"


# The position a refusal gives in the document: "line 7: interfaces[0]...".
LINE_PREFIX = re.compile(r"^line [0-9]+: ")


def daemon_text(stderr, stdout="", without_lines=False):
    """The daemon's words from rdma-cli's error output, without the `Error: ` prefix that
    rdma-cli (as nmcli) puts before them. `without_lines` drops the document's line numbers:
    where the module wrote the document itself, they count lines of its JSON, not of the
    playbook, and the key path that follows names the entry."""
    lines = []
    for line in (stderr or "").splitlines():
        line = line.strip()
        if line.startswith("Error: "):
            line = line[len("Error: "):]
        if without_lines:
            line = LINE_PREFIX.sub("", line)
        if line:
            lines.append(line)
    if not lines and stdout:
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return "\n".join(lines)


def failure(command, rc, stdout, stderr, without_lines=False):
    """(kind, message) for a run of `rdma-cli COMMAND` that exited with rc; the message
    keeps the daemon's text (see daemon_text for without_lines)."""
    kind, meaning = EXIT_MEANINGS.get(rc, ("failed", "unexpected exit status"))
    text = daemon_text(stderr, stdout, without_lines)
    message = "rdma-cli %s: %s (exit %d)" % (command, meaning, rc)
    if text:
        message = "%s: %s" % (message, text)
    return kind, message


def parse_json(text, what):
    """rdma-cli's JSON output; ValueError naming `what` when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError("rdma-cli %s printed no JSON (%s): %r" % (what, e, (text or "")[:200]))


def _change(entry):
    if isinstance(entry, dict):
        return dict((k, "" if entry.get(k) is None else str(entry.get(k))) for k in CHANGE_FIELDS)
    if isinstance(entry, (list, tuple)) and len(entry) == len(CHANGE_FIELDS):
        return dict(zip(CHANGE_FIELDS, ("" if v is None else str(v) for v in entry)))
    raise ValueError("not a change: %r" % (entry,))


def parse_changes(data):
    """The change list of a diff or apply answer: a list of changes, or an object with
    `changes`; each change an object with CHANGE_FIELDS or a five-element list (the D-Bus
    (sssss) form)."""
    if isinstance(data, dict):
        data = data.get("changes", [])
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError("not a change list: %r" % (data,))
    return [_change(entry) for entry in data]


def parse_pending(data):
    """The pending change's object path of an apply answer, or None when nothing waits for
    confirmation (no timeout, nothing changed, or the daemon's "/")."""
    if not isinstance(data, dict):
        return None
    pending = data.get("pending")
    if not pending or pending == NO_PENDING:
        return None
    return str(pending)


def render_diff(changes):
    """Ansible's diff form (before/after texts) of a change list: one line per setting,
    `path: value`, so that `--diff` shows removed settings as `-` lines, added ones as `+`
    lines and a changed value as one of each."""
    before = []
    after = []
    for c in sorted(changes, key=lambda c: c["path"]):
        if c["op"] in ("set", "remove"):
            before.append("%s: %s" % (c["path"], c["current"]))
        if c["op"] in ("set", "add"):
            after.append("%s: %s" % (c["path"], c["wanted"]))
    return {
        "before_header": "rdma-manager state (now)",
        "after_header": "rdma-manager state (wanted)",
        "before": "".join(line + "\n" for line in before),
        "after": "".join(line + "\n" for line in after),
    }


def document_text(state):
    """The state document as rdma-cli reads it on stdin: JSON (a YAML subset), with the keys
    in a stable order."""
    return json.dumps(state, sort_keys=True)


def run_cli(module, args, data=None):
    """Runs `rdma-cli -j ARGS` on the managed host; returns (rc, stdout, stderr)."""
    cli = module.params.get("rdma_cli") or module.get_bin_path("rdma-cli", required=True)
    return module.run_command([cli, "-j"] + list(args), data=data, binary_data=True)


def fail_from(module, command, rc, stdout, stderr, without_lines=False, **extra):
    """fail_json for a failed rdma-cli run, with the daemon's text and the failure's kind."""
    kind, message = failure(command, rc, stdout, stderr, without_lines)
    module.fail_json(msg=message, rc=rc, error=kind, stdout=stdout, stderr=stderr, **extra)
