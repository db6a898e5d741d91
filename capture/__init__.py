"""Wire-byte capture: tshark records what each operation puts on the wire.

`capture.tshark` records and reads captures and does the accounting;
`lab.host.netns` provides an optional veth link with a real 1500-byte MTU.
"""
