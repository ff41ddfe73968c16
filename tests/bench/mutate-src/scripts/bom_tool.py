# A script saved with a byte-order mark and CRLF line endings.
import sys


def parse_args(argv, default_port):
    port = default_port
    verbose = False
    for arg in argv:
        if arg == "-v":
            verbose = True
        elif arg.isdigit():
            port = int(arg)
    return port, verbose


def main():
    port, verbose = parse_args(sys.argv[1:], 8080)
    if verbose:
        print("port", port)
    return 0
