#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_state
short_description: Apply a declarative RDMA state with rdma-manager, confirmed or rolled back
version_added: 0.1.0
description:
  - Brings the managed host's RDMA configuration to a declarative state document through
    rdma-manager's C(rdma-cli), covering soft links, RoCE mode, ToS and QoS profile (lossless
    RoCE) per port, IPoIB interfaces and P_Key children with their IP settings, device naming,
    rdma-core's module lists, the memlock limits, NFS over RDMA, the subnet manager, the
    link-test responder, the port types of VPI adapters and the GUIDs of SR-IOV VFs.
  - >-
    The document is merged with what the host has, as nmstate does; what it does not mention is
    left as it is, and an entry is removed only by C(state: absent). Its format is the one
    C(rdma-cli show --yaml) prints and M(rdmamanager.rdma.rdma_facts) returns.
  - The module first asks C(rdma-cli diff) what would change. With no change it applies nothing
    and returns C(changed=false). In check mode it stops there and returns the changes and
    the diff.
  - Otherwise it runs C(rdma-cli apply) with I(rollback_timeout). rdma-managerd applies the
    whole difference as one transaction, reads the host back, and undoes every change if
    anything failed or the host does not match the document. With a timeout, the applied
    change then waits for confirmation and rolls itself back when the timeout passes unconfirmed.
  - B(Confirm or roll back.) With I(confirm=true) this module's action plugin, on the
    controller, confirms the pending change with M(rdmamanager.rdma.rdma_confirm) in a second
    module run, after the apply has returned and after resetting the connection, so that over
    SSH the confirmation travels over a new connection. If the change cut the controller off
    (an address, a P_Key or an MTU on the interface Ansible reaches the host through), the
    confirmation cannot arrive, the task reports the host unreachable, and the host rolls the change
    back by itself when I(rollback_timeout) passes. The managed host never confirms its own
    change.
  - With I(confirm=false) the change is left pending; confirm it in a later task with
    M(rdmamanager.rdma.rdma_confirm) (for example after a task that checks the host is still
    reachable), or let it roll back.
author:
  - rdma-manager contributors (!UNKNOWN)
options:
  state:
    description:
      - The state document, as a dictionary (YAML in the playbook).
      - Keys are kebab-case; every key is described in C(docs/STATE.md) of the rdma-manager
        sources, with examples in C(docs/ANSIBLE.md).
      - Exactly one of I(state) and I(src) is required.
    type: dict
  src:
    description:
      - Path of a state document (YAML or JSON) on the managed host.
      - Exactly one of I(state) and I(src) is required.
    type: path
  rollback_timeout:
    description:
      - Seconds the applied change waits for confirmation before rdma-managerd rolls it back,
        from 10 to 3600.
      - C(0) commits the change at once, with nothing to confirm or roll back.
    type: int
    default: 60
  confirm:
    description:
      - Whether the controller confirms the pending change, over a new connection, once the
        apply has returned (see the description).
      - With C(false) the change stays pending until M(rdmamanager.rdma.rdma_confirm)
        confirms it or the timeout rolls it back.
      - Has no effect when I(rollback_timeout=0).
    type: bool
    default: true
  rdma_cli:
    description:
      - Path of the C(rdma-cli) program on the managed host.
      - By default it is looked up on C(PATH).
    type: path
requirements:
  - rdma-manager's C(rdma-cli) and a running C(rdma-managerd) on the managed host.
  - Changes are authorized by polkit; run the task as root (C(become)) or as a user polkit
    allows (the group C(rdma) with the project's example rule).
attributes:
  action:
    support: full
    description: An action plugin confirms the change from the controller.
  check_mode:
    support: full
    description: Reports what would change and changes nothing.
  diff_mode:
    support: full
    description: 'One line per changed setting, C(path: value), before and after.'
notes:
  - Failures carry rdma-cli's exit status as C(rc), its kind as C(error) and the daemon's
    own message in C(msg). A document refused (an unknown key, a wrong value, a name the host
    lacks) changes nothing.
  - The bus C(rdma-cli) talks to is the system bus unless C(DBUS_SYSTEM_BUS_ADDRESS) names
    another, which the play's C(environment) can set.
seealso:
  - module: rdmamanager.rdma.rdma_facts
  - module: rdmamanager.rdma.rdma_confirm
"""

EXAMPLES = r"""
- name: A Soft-RoCE link and RoCE v2 with a ToS, confirmed by the controller
  rdmamanager.rdma.rdma_state:
    state:
      soft-links:
        - name: rxe0
          type: rxe
          netdev: eth1
      roce:
        - device: mlx5_0
          port: 1
          mode: v2
          tos: 106

- name: IPoIB with a P_Key child; rolls back after 30 s if the controller loses the host
  rdmamanager.rdma.rdma_state:
    rollback_timeout: 30
    state:
      interfaces:
        - name: ib0
          type: infiniband
          mtu: 65520
          infiniband:
            mode: connected
        - name: ib0.8002
          type: infiniband
          infiniband:
            base-iface: ib0
            pkey: "0x8002"
            mode: datagram
          ipv4:
            enabled: true
            dhcp: false
            address:
              - ip: 192.0.2.1
                prefix-length: 24

- name: Both ports of a ConnectX-3 to Ethernet (port 2 first, as mlx4 requires)
  rdmamanager.rdma.rdma_state:
    state:
      ports:
        - device: mlx4_0
          port: 2
          type: eth
        - device: mlx4_0
          port: 1
          type: eth

- name: Lossless RoCE on priority 3 (trust DSCP, PFC, ETS, DSCP 26, ToS 106, ECN)
  rdmamanager.rdma.rdma_state:
    state:
      roce:
        - device: mlx5_0
          port: 1
          tos: 106
          qos:
            trust: dscp
            pfc: [3]
            ets: {bandwidth: [50, 50, 0, 0, 0, 0, 0, 0], prio-tc: [0, 0, 0, 1, 0, 0, 0, 0]}
            dscp: {"26": 3}
            traffic-class: 106
            ecn: [3]

- name: GUIDs for VF 0 of an InfiniBand PF, set again whenever the VF is created
  rdmamanager.rdma.rdma_state:
    state:
      sriov-vfs:
        - device: mlx5_1
          vf: 0
          node-guid: "00:11:22:33:44:55:66:77"
          port-guid: "00:11:22:33:44:55:66:78"

- name: A document kept on the host, committed at once
  rdmamanager.rdma.rdma_state:
    src: /etc/rdma-manager/site.yml
    rollback_timeout: 0

# The same confirm-or-rollback in two tasks, with a check in between.
- name: Apply, leaving the change pending
  rdmamanager.rdma.rdma_state:
    state: "{{ rdma_wanted }}"
    rollback_timeout: 60
    confirm: false
  register: applied

- name: The host still answers on its storage network
  ansible.builtin.command: ping -c 1 -W 2 192.0.2.254
  changed_when: false
  when: applied.pending is not none

- name: Confirm over a new connection
  rdmamanager.rdma.rdma_confirm:
    pending: "{{ applied.pending }}"
  when: applied.pending is not none
"""

RETURN = r"""
changes:
  description:
    - What the apply changed (in check mode, what it would change), one entry per setting.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The setting's key path, such as C(roce[mlx5_0/1].tos).
      type: str
    op:
      description: C(add), C(remove) or C(set).
      type: str
    current:
      description: The value before, as text (empty when absent).
      type: str
    wanted:
      description: The value after, as text (empty when removed).
      type: str
    action:
      description: The polkit action the change asks.
      type: str
  sample:
    - path: roce[mlx5_0/1].tos
      op: set
      current: "0"
      wanted: "106"
      action: org.rdmamanager.rdmamanager1.manage-roce
pending:
  description:
    - The D-Bus object path of the change waiting for confirmation, or null when nothing
      waits (no change, check mode, I(rollback_timeout=0)).
  returned: always
  type: str
  sample: /org/rdmamanager/RdmaManager1/Change/1
confirmed:
  description: Whether the controller confirmed the pending change (I(confirm=true)).
  returned: when the change waited for confirmation
  type: bool
  sample: true
rc:
  description: rdma-cli's exit status of a failed run.
  returned: failure
  type: int
  sample: 2
error:
  description:
    - The kind of failure, from rdma-cli's exit status; C(invalid) (the document was refused),
      C(not-authorized), C(not-found), C(no-daemon), C(rolled-back) or C(failed).
  returned: failure
  type: str
  sample: invalid
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.rdmamanager.rdma.plugins.module_utils.rdma_cli import (
    DIFF_CHANGES_EXIST,
    document_text,
    fail_from,
    parse_changes,
    parse_json,
    parse_pending,
    render_diff,
    run_cli,
)

# The rollback timeouts rdma-cli accepts.
MIN_TIMEOUT = 10
MAX_TIMEOUT = 3600


def document(module):
    """The document's text, from I(state) or read from I(src)."""
    if module.params["state"] is not None:
        return document_text(module.params["state"])
    src = module.params["src"]
    try:
        with open(src, "rb") as f:
            return to_text(f.read(), errors="surrogate_or_strict")
    except (IOError, OSError) as e:
        module.fail_json(msg="cannot read %s: %s" % (src, to_text(e)))


def answer(module, what, out, err):
    try:
        return parse_changes(parse_json(out, what)), parse_json(out, what)
    except ValueError as e:
        module.fail_json(msg=to_text(e), stdout=out, stderr=err)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="dict"),
            src=dict(type="path"),
            rollback_timeout=dict(type="int", default=60),
            confirm=dict(type="bool", default=True),
            rdma_cli=dict(type="path"),
        ),
        mutually_exclusive=[("state", "src")],
        required_one_of=[("state", "src")],
        supports_check_mode=True,
    )
    timeout = module.params["rollback_timeout"]
    if timeout != 0 and not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        module.fail_json(
            msg="rollback_timeout must be 0 or %d to %d seconds, not %d" % (MIN_TIMEOUT, MAX_TIMEOUT, timeout)
        )
    text = to_bytes(document(module), errors="surrogate_or_strict")
    # A refusal's line numbers count lines of a file the user wrote (src), or of the JSON this
    # module made of the state option, which mean nothing in the playbook.
    own_document = module.params["state"] is not None

    rc, out, err = run_cli(module, ["diff", "-"], data=text)
    if rc not in (0, DIFF_CHANGES_EXIST):
        fail_from(module, "diff", rc, out, err, own_document, changes=[], pending=None)
    changes = answer(module, "diff", out, err)[0]
    if not changes:
        module.exit_json(changed=False, changes=[], pending=None)
    if module.check_mode:
        module.exit_json(changed=True, changes=changes, pending=None, diff=render_diff(changes))

    # Without --timeout the change is committed at once (rdma-cli takes no --timeout 0).
    apply = ["apply", "-"] + (["--timeout", str(timeout)] if timeout else [])
    rc, out, err = run_cli(module, apply, data=text)
    if rc != 0:
        fail_from(module, "apply", rc, out, err, own_document, changes=changes, pending=None)
    applied, data = answer(module, "apply", out, err)
    module.exit_json(
        changed=bool(applied),
        changes=applied,
        pending=parse_pending(data) if timeout > 0 else None,
        diff=render_diff(applied),
    )


if __name__ == "__main__":
    main()
