"""Runs a command with its standard input on a pseudo-terminal (as a user
typing `nnc-jit` with no file would) and prints what it wrote and its exit
status; stops it after 10 seconds, as a tool waiting on the terminal would
never end."""
import os
import subprocess
import sys

master, slave = os.openpty()
try:
    p = subprocess.run(sys.argv[1:], stdin=slave, capture_output=True,
                       timeout=10, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    print("exit status %d" % p.returncode)
except subprocess.TimeoutExpired:
    print("timed out: the tool waited on the terminal")
finally:
    os.close(master)
    os.close(slave)
