"""What every service shares, so the protocol layer is the only thing that differs."""
