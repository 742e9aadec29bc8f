"""A ProxyCommand for tests: stdin/stdout <-> TCP HOST PORT (like `nc HOST PORT`)."""

import os
import socket
import sys
import threading


def main():
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])))

    def up():
        while True:
            data = os.read(0, 65536)
            if not data:
                sock.shutdown(socket.SHUT_WR)
                return
            sock.sendall(data)
    threading.Thread(target=up, daemon=True).start()
    while True:
        data = sock.recv(65536)
        if not data:
            return
        os.write(1, data)


if __name__ == "__main__":
    main()
