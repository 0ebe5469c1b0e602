"""An offline replay tool: labels cached margins (not training code)."""

from segmenter import Head


class Replay:
    def __init__(self, head: Head):
        self.head = head
        self.cache = {}

    def label(self, key):
        return self.head.classify(self.cache[key])
