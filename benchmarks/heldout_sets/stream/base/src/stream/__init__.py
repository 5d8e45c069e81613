"""stream: node-level GraphMAE with an EMA teacher, written as generators and context managers."""
