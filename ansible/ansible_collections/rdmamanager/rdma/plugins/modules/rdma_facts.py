#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma-manager contributors
# SPDX-License-Identifier: MIT OR Apache-2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_facts
short_description: Read a host's RDMA state and ports from rdma-manager
version_added: 0.1.0
description:
  - Runs C(rdma-cli -j show) and C(rdma-cli -j status) on the managed host and returns
    the declarative state document and the devices and ports as facts.
  - The state document has the form M(rdmamanager.rdma.rdma_state) takes, with every section
    filled in, so applying it as it is changes nothing.
  - Reading needs no privilege; C(rdma-managerd) must be running.
author:
  - rdma-manager contributors (!UNKNOWN)
options:
  rdma_cli:
    description:
      - Path of the C(rdma-cli) program on the managed host.
      - By default it is looked up on C(PATH).
    type: path
requirements:
  - rdma-manager's C(rdma-cli) and a running C(rdma-managerd) on the managed host.
attributes:
  check_mode:
    support: full
    description: Reads only; runs the same in check mode.
  diff_mode:
    support: none
    description: Returns no diff.
  facts:
    support: full
    description: Sets C(rdma_state) and C(rdma_ports).
notes:
  - The bus C(rdma-cli) talks to is the system bus unless C(DBUS_SYSTEM_BUS_ADDRESS) names
    another, which the play's C(environment) can set.
seealso:
  - module: rdmamanager.rdma.rdma_state
"""

EXAMPLES = r"""
- name: Read the RDMA state
  rdmamanager.rdma.rdma_facts:

- name: Show the RoCE settings of every port
  ansible.builtin.debug:
    var: ansible_facts.rdma_state.roce

- name: Save the host's state as a document to apply elsewhere
  ansible.builtin.copy:
    content: "{{ ansible_facts.rdma_state | to_nice_yaml }}"
    dest: "/srv/rdma/{{ inventory_hostname }}.yml"
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
ansible_facts:
  description: The facts this module sets.
  returned: success
  type: dict
  contains:
    rdma_state:
      description:
        - The host's declarative RDMA state, as C(rdma-cli -j show) prints it.
        - Sections C(soft-links), C(roce), C(interfaces), C(naming), C(modules), C(memlock),
          C(nfs-rdma), C(subnet-manager), C(responder) and C(ports) (port types).
      returned: success
      type: dict
      sample:
        soft-links:
          - name: rxe0
            type: rxe
            netdev: eth0
        roce:
          - device: mlx5_1
            port: 1
            mode: v2
            tos: 0
    rdma_ports:
      description:
        - Every port of every RDMA device, as C(rdma-cli -j status) prints them, with its
          device, port number, link layer, logical and physical state, rate and netdev.
      returned: success
      type: list
      elements: dict
      sample:
        - device: mlx5_0
          port: "1"
          link-layer: InfiniBand
          state: ACTIVE
          phys: LinkUp
          rate: 200 Gb/sec (4X HDR)
          netdev: ibp59s0f0
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmamanager.rdma.plugins.module_utils.rdma_cli import (
    fail_from,
    parse_json,
    run_cli,
)


def read(module, args, what):
    rc, out, err = run_cli(module, args)
    if rc != 0:
        fail_from(module, what, rc, out, err)
    try:
        return parse_json(out, what)
    except ValueError as e:
        module.fail_json(msg=str(e), stdout=out, stderr=err)


def main():
    module = AnsibleModule(
        argument_spec=dict(rdma_cli=dict(type="path")),
        supports_check_mode=True,
    )
    state = read(module, ["show"], "show")
    ports = read(module, ["status"], "status")
    module.exit_json(changed=False, ansible_facts=dict(rdma_state=state, rdma_ports=ports))


if __name__ == "__main__":
    main()
