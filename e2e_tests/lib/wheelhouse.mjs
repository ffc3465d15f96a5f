// A local wheelhouse for e2e tests: small wheels, and sdists whose in-tree build backend is the
// given Python source (run by the installer when it builds them).
import { execFileSync } from 'node:child_process';

export const PYTHON = '/usr/bin/python3';

// Writes wheels (and sdists with an in-tree build backend) from a JSON list of specs.
const WRITER = String.raw`
import base64, hashlib, io, json, os, sys, tarfile, zipfile
out_dir = sys.argv[1]
for s in json.loads(sys.argv[2]):
    if s.get("sdist_backend"):
        base = "%s-%s" % (s["name"], s["version"])
        files = {"pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "mpes_backend"\nbackend-path = ["."]\n',
                 "PKG-INFO": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (s["name"], s["version"]),
                 "mpes_backend.py": s["sdist_backend"]}
        with tarfile.open(os.path.join(out_dir, base + ".tar.gz"), "w:gz") as t:
            for name, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(base + "/" + name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        continue
    dist = "%s-%s.dist-info" % (s["name"], s["version"])
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (s["name"], s["version"])
    if s.get("requires_python"):
        meta += "Requires-Python: %s\n" % s["requires_python"]
    meta += "".join("Requires-Dist: %s\n" % r for r in s.get("requires", []))
    entries = {p: t.encode() for p, t in s.get("files", {}).items()}
    for p, n in s.get("random_files", {}).items():
        entries[p] = os.urandom(n)
    entries[dist + "/METADATA"] = meta.encode()
    entries[dist + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: mpes-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for p, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (p, digest, len(data)))
    record.append(dist + "/RECORD,,")
    entries[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
    for p, t in s.get("tampered", {}).items():  # changed after RECORD was written
        entries[p] = t.encode()
    with zipfile.ZipFile(os.path.join(out_dir, "%s-%s-py3-none-any.whl" % (s["name"], s["version"])), "w") as z:
        for p, data in entries.items():
            z.writestr(p, data)
`;

// Writes `packages` (specs: name, version, and files / random_files / requires / requires_python /
// tampered (files whose content differs from what RECORD says), or sdist_backend) into `dir`.
export function writePackages(dir, packages) {
  execFileSync(PYTHON, ['-I', '-c', WRITER, dir, JSON.stringify(packages)]);
}
