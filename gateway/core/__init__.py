"""The core's contracts, which the composition root, the faces and the adapters all build on.

The adapter contract and the table of kinds (`adapter`), the config schema (`config`), and the
protocol-free client core every face of the bus is built on (`client`, with `admission` and `auth_guard`).
"""
