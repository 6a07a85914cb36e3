#!/usr/bin/env python3
"""What the example nftables rule for the SRT port lets through.

Usage (from the repository root, as root; a network namespace of its own, so nothing
of the machine's firewall is touched):

    unshare -n sh -c 'ip link set lo up &&
      nft -f packaging/examples/srt-handshake-limit.nft &&
      python3 bench/srt_handshake_limit.py'

Sends 5,000 each of SRT handshake control packets, data packets and ACK control packets
to 127.0.0.1:9000 at once and counts what reaches a UDP socket there. With the rule,
about the burst (100) plus 500/s of the handshakes pass and the data and ACKs all do
(a few may be lost to the socket's receive buffer; run without the rule to see that
loss alone).
"""

import socket
import struct
import time

PORT = 9000
COUNT = 5000


def packet(first_word: int) -> bytes:
    """A 16-byte SRT header starting with `first_word`, and 16 bytes of payload."""
    return struct.pack("!IIII", first_word, 0, 0, 0) + b"\0" * 16


def main() -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", PORT))
    receiver.setblocking(False)
    # As large as the system allows (net.core.rmem_max): the datagrams wait unread.
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    kinds = {"handshake": 0x8000_0000, "data": 0x0000_0001, "ack": 0x8002_0000}
    start = time.time()
    for _ in range(COUNT):
        for word in kinds.values():
            sender.sendto(packet(word), ("127.0.0.1", PORT))
    elapsed = time.time() - start
    time.sleep(0.2)
    got = dict.fromkeys(kinds, 0)
    by_word = {word: kind for kind, word in kinds.items()}
    while True:
        try:
            datagram = receiver.recv(2000)
        except BlockingIOError:
            break
        got[by_word[struct.unpack("!I", datagram[:4])[0]]] += 1
    print(f"sent {COUNT} of each in {elapsed:.2f} s; received {got}")


if __name__ == "__main__":
    main()
