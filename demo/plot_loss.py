#!/usr/bin/python3
"""Draws the loss curve of WORK/train_log.jsonl as a PNG (no plotting
library: a small raster, a 5x7 pixel font, zlib): the training loss (a
moving average, grey), the held-out loss of the plain text (blue) and of
the dialogues (red), and of focus_data.py's dialogues (green) when the
log has them, against the tokens seen.

  /usr/bin/python3 demo/plot_loss.py [--log demo/work/train_log.jsonl] [-o demo/loss.png]
"""
import argparse
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# 5x7 glyphs, one string of 7 rows of 5 bits each.
FONT = {
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11110 00001 00001 01110 00001 00001 11110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
    ".": "00000 00000 00000 00000 00000 01100 01100", " ": "00000 00000 00000 00000 00000 00000 00000",
    "-": "00000 00000 00000 11111 00000 00000 00000", "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000", ",": "00000 00000 00000 00000 01100 00100 01000",
    "A": "01110 10001 10001 11111 10001 10001 10001", "C": "01110 10001 10000 10000 10000 10001 01110",
    "D": "11110 10001 10001 10001 10001 10001 11110", "E": "11111 10000 10000 11110 10000 10000 11111",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "K": "10001 10010 10100 11000 10100 10010 10001",
    "L": "10000 10000 10000 10000 10000 10000 11111", "M": "10001 11011 10101 10101 10001 10001 10001",
    "N": "10001 11001 10101 10011 10001 10001 10001", "O": "01110 10001 10001 10001 10001 10001 01110",
    "P": "11110 10001 10001 11110 10000 10000 10000", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "X": "10001 10001 01010 00100 01010 10001 10001",
    "W": "10001 10001 10001 10101 10101 10101 01010", "F": "11111 10000 10000 11110 10000 10000 10000",
    "B": "11110 10001 10001 11110 10001 10001 11110", "V": "10001 10001 10001 10001 10001 01010 00100",
}


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def set(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def line(self, x0, y0, x1, y1, c, width=1):
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for ox in range(width):
                for oy in range(width):
                    self.set(x0 + ox - width // 2, y0 + oy - width // 2, c)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, c=(0, 0, 0), scale=2):
        for ch in s.upper():
            rows = FONT.get(ch, FONT[" "]).split()
            for ry, row in enumerate(rows):
                for rx, bit in enumerate(row):
                    if bit == "1":
                        for a in range(scale):
                            for b in range(scale):
                                self.set(x + rx * scale + a, y + ry * scale + b, c)
            x += 6 * scale

    def png(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(t, d):
            return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                    chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", default=os.path.join(HERE, "work", "train_log.jsonl"))
    ap.add_argument("-o", default=os.path.join(HERE, "loss.png"))
    a = ap.parse_args()
    recs = [json.loads(l) for l in open(a.log) if l.strip()]
    train = [(r["tokens"], r["loss_ema"]) for r in recs if r["kind"] == "train"]
    ev = [r for r in recs if r["kind"] == "eval"]
    text = [(r["tokens"], r["heldout_text"]) for r in ev]
    chat = [(r["tokens"], r["heldout_chat"]) for r in ev]
    focus = [(r["tokens"], r["heldout_focus"]) for r in ev if "heldout_focus" in r]
    W, H, L, R, T, B = 720, 440, 70, 20, 50, 60
    c = Canvas(W, H)
    xmax = max(t for t, _ in train + text) or 1
    ys = [v for _, v in train + text + chat + focus]
    ymin, ymax = 0.0, max(ys) * 1.05

    def X(t):
        return L + (W - L - R) * t / xmax

    def Y(v):
        return H - B - (H - T - B) * (v - ymin) / (ymax - ymin)
    grey, blue, red, green, axis = (150, 150, 150), (30, 80, 200), (200, 40, 40), (30, 150, 60), (0, 0, 0)
    for k in range(0, int(ymax) + 1):
        c.line(L, Y(k), W - R, Y(k), (225, 225, 225))
        c.text(L - 30, int(Y(k)) - 7, str(k))
    step = 0.5 if xmax < 3e6 else 1.0
    k = 0.0
    while k * 1e6 <= xmax:
        c.line(X(k * 1e6), H - B, X(k * 1e6), H - B + 5, axis)
        c.text(int(X(k * 1e6)) - 12, H - B + 10, f"{k:g}")
        k += step
    c.line(L, T, L, H - B, axis)
    c.line(L, H - B, W - R, H - B, axis)
    c.text(L + 180, H - 25, "TOKENS SEEN (MILLIONS)")
    c.text(8, 12, "LOSS, NATS PER TOKEN")
    for pts, col, w in ((train, grey, 1), (text, blue, 2), (chat, red, 2), (focus, green, 2)):
        for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
            c.line(X(t0), Y(v0), X(t1), Y(v1), col, w)
        for t, v in pts if col != grey else []:
            for dx in range(-3, 4):
                for dy in range(-3, 4):
                    c.set(int(X(t)) + dx, int(Y(v)) + dy, col)
    lx = W - R - 330
    labels = [("TRAIN (AVERAGE)", grey), ("HELD-OUT TEXT", blue), ("HELD-OUT DIALOGUES", red)]
    if focus:
        labels.append(("HELD-OUT FOCUS DIALOGUES", green))
    for i, (label, col) in enumerate(labels):
        y = T + 5 + 22 * i
        c.line(lx, y + 7, lx + 30, y + 7, col, 3)
        c.text(lx + 40, y, label, col)
    c.png(a.o)
    print(f"{a.o}: {len(train)} training points, {len(ev)} evaluations")


if __name__ == "__main__":
    main()
