"""Host administration: what the lab changes on the machine itself rather than
in its own processes. A private Docker daemon and its images (dockerd.py), the
Compose stack of Docker mode (compose.py), network namespaces joined by veth
pairs (netns.py, used by both load and capture), the shaped network paths
built on them and measured before use (netpath.py, with its packet-level delay
emulator nfqdelay/ where the kernel has no netem), and the external programs
installed once into the cache (tools.py). Most of it needs root."""
