"""Host administration: what the lab changes on the machine itself rather than
in its own processes. A private Docker daemon and its images (dockerd.py), the
Compose stack of Docker mode (compose.py), network namespaces joined by veth
pairs (netns.py, used by both load and capture), and the external programs
installed once into the cache (tools.py). Most of it needs root."""
