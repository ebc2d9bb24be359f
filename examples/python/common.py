"""What the Python examples share: the default place and the metrics log."""

import json

import tandem


def parse_place(text):
    """--place: "" -> the first GPU if there is one, else the CPU."""
    if not text:
        return tandem.CUDAPlace(0) if tandem.is_compiled_with_cuda() else tandem.CPUPlace()
    return tandem.Place(text)


class MetricsLog:
    """--metrics_out: one JSON object per line, in the C++ examples' format (floats with 9
    significant digits, enough to give back every float32), or nothing without a path."""

    def __init__(self, path):
        self._file = open(path, "w") if path else None

    def write(self, kind, **fields):
        if self._file is None:
            return
        parts = ['"kind":%s' % json.dumps(kind)]
        for key, value in fields.items():
            text = ("%.9g" % value) if isinstance(value, float) else json.dumps(value)
            parts.append("%s:%s" % (json.dumps(key), text))
        self._file.write("{" + ",".join(parts) + "}\n")
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()


def copies(stats):
    """The copy fields of a metrics line, as the C++ examples write them."""
    return dict(h2d_copies=stats.copies_h2d, h2d_bytes=stats.bytes_h2d,
                d2h_copies=stats.copies_d2h, d2h_bytes=stats.bytes_d2h)
