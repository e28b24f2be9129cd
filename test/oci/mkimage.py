#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The project's own OCI image writer, for the tests (the other, independent
producer is umoci). Writes an OCI image layout, an oci-archive or a
docker-archive from a JSON spec, including deliberately hostile layers.

    mkimage.py OUT SPEC.json

Prints {"manifest": "sha256:...", "config": "sha256:...", "diff_ids": [...]}.

Spec:
  {"format": "oci" | "oci-archive" | "docker-archive",
   "tag": "latest",
   "config": {"Env": [...], "Cmd": [...], "Entrypoint": [...], "User": "", "WorkingDir": ""},
   "corrupt": "layer-digest" | "diff_id" | "manifest" | "config" | "config-size" |
              "config-media-type" | "layer-size-zero",   (optional)
   "layers": [
     {"compression": "gzip" | "zstd" | "none",
      "entries": [{"name": "bin/x", "type": "file" | "dir" | "symlink" | "hardlink" |
                   "chr" | "blk" | "fifo", "data": "text", "from": "/host/file",
                   "zeros": BYTES, "random": BYTES, "repeat": TIMES, "mode": 0o644, "target": "...", "major": 1, "minor": 3}],
      "busybox": true,                 (adds /bin/busybox and applet links)
      "sparse": {"name": "big", "size": BYTES},   (via GNU tar --sparse)
      "truncate": BYTES,               (the blob is cut to this length)
      "diff_id": "sha256:..."}]}       (the config claims this diff_id for the layer)
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

APPLETS = ['sh', 'echo', 'cat', 'ls', 'true', 'false', 'id', 'env', 'pwd', 'test', 'touch', 'mkdir', 'rm',
           'stat', 'sleep', 'mount', 'ps', 'wc', 'grep', 'head', 'uname', 'readlink', 'ln']


def sha(b):
    return 'sha256:' + hashlib.sha256(b).hexdigest()


class Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def layer_tar(spec, work):
    if 'sparse' in spec:
        d = tempfile.mkdtemp(dir=work)
        with open(os.path.join(d, spec['sparse']['name']), 'wb') as f:
            f.truncate(spec['sparse']['size'])
            f.seek(spec['sparse']['size'] // 2)
            f.write(b'middle')
        out = os.path.join(work, 'sparse.tar')
        subprocess.run(['tar', '--sparse', '--format=posix', '-cf', out, '-C', d, '.'], check=True)
        return out
    out = os.path.join(work, 'layer.tar')
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        entries = list(spec.get('entries', []))
        if spec.get('busybox'):
            entries = [{'name': 'bin', 'type': 'dir', 'mode': 0o755},
                       {'name': 'bin/busybox', 'type': 'file', 'from': '/bin/busybox', 'mode': 0o755}] + \
                      [{'name': 'bin/' + a, 'type': 'symlink', 'target': 'busybox'} for a in APPLETS] + \
                      [{'name': d, 'type': 'dir', 'mode': 0o755} for d in ('etc', 'tmp', 'work', 'root')] + entries
        entries = [x for e in entries for x in [e] * e.get('repeat', 1)]
        for e in entries:
            ti = tarfile.TarInfo(e['name'])
            ti.mode = e.get('mode', 0o644 if e.get('type', 'file') == 'file' else 0o755)
            ti.mtime = 1700000000
            kind = e.get('type', 'file')
            data = None
            if kind == 'file':
                ti.type = tarfile.REGTYPE
                if 'from' in e:
                    with open(e['from'], 'rb') as f:
                        raw = f.read()
                    data, ti.size = io.BytesIO(raw), len(raw)
                elif 'zeros' in e:
                    data, ti.size = io.BufferedReader(Zeros(e['zeros']), 1 << 20), e['zeros']
                elif 'random' in e:  # (incompressible: keeps a layer under the ratio bound)
                    raw = os.urandom(e['random'])
                    data, ti.size = io.BytesIO(raw), len(raw)
                else:
                    raw = e.get('data', '').encode()
                    data, ti.size = io.BytesIO(raw), len(raw)
            elif kind == 'dir':
                ti.type = tarfile.DIRTYPE
            elif kind == 'symlink':
                ti.type, ti.linkname = tarfile.SYMTYPE, e['target']
            elif kind == 'hardlink':
                ti.type, ti.linkname = tarfile.LNKTYPE, e['target']
            elif kind in ('chr', 'blk'):
                ti.type = tarfile.CHRTYPE if kind == 'chr' else tarfile.BLKTYPE
                ti.devmajor, ti.devminor = e.get('major', 1), e.get('minor', 3)
            elif kind == 'fifo':
                ti.type = tarfile.FIFOTYPE
            t.addfile(ti, data)
    return out


def compress(path, how, work):
    if how == 'none':
        return path
    out = path + ('.gz' if how == 'gzip' else '.zst')
    if how == 'gzip':
        with open(path, 'rb') as src, open(out, 'wb') as dst:
            with gzip.GzipFile(fileobj=dst, mode='wb', compresslevel=6, mtime=0) as g:
                shutil.copyfileobj(src, g, 1 << 20)
    else:
        subprocess.run(['zstd', '-q', '-19', '-f', path, '-o', out], check=True)
    return out


def file_sha(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return 'sha256:' + h.hexdigest(), os.path.getsize(path)


def main():
    out, spec = sys.argv[1], json.load(open(sys.argv[2]))
    fmt = spec.get('format', 'oci')
    work = tempfile.mkdtemp(prefix='mkimage-')
    try:
        layers = []  # (blob path, digest, size, diff_id, media type)
        for i, l in enumerate(spec['layers']):
            d = os.path.join(work, 'l%d' % i)
            os.mkdir(d)
            tar = layer_tar(l, d)
            diff_id, _ = file_sha(tar)
            how = l.get('compression', 'gzip')
            blob = compress(tar, how, d)
            if 'truncate' in l:
                with open(blob, 'r+b') as f:
                    f.truncate(l['truncate'])
            digest, size = file_sha(blob)
            diff_id = l.get('diff_id', diff_id)  # another layer's, claimed (a lie the reader must catch)
            mt = 'application/vnd.oci.image.layer.v1.tar' + {'gzip': '+gzip', 'zstd': '+zstd', 'none': ''}[how]
            layers.append((blob, digest, size, diff_id, mt))
        corrupt = spec.get('corrupt')
        diff_ids = [x[3] for x in layers]
        if corrupt == 'diff_id':
            diff_ids[-1] = sha(b'not this layer')
        config = {'architecture': 'amd64', 'os': 'linux',
                  'config': spec.get('config', {}),
                  'rootfs': {'type': 'layers', 'diff_ids': diff_ids},
                  'history': [{'created_by': 'test/oci/mkimage.py'}]}
        config_b = json.dumps(config, sort_keys=True).encode()
        if fmt == 'docker-archive':
            root = os.path.join(work, 'docker')
            os.mkdir(root)
            cfg_name = hashlib.sha256(config_b).hexdigest() + '.json'
            with open(os.path.join(root, cfg_name), 'wb') as f:
                f.write(config_b)
            paths = []
            for i, (blob, *_rest) in enumerate(layers):
                os.mkdir(os.path.join(root, 'l%d' % i))
                shutil.copy(blob, os.path.join(root, 'l%d' % i, 'layer.tar'))
                paths.append('l%d/layer.tar' % i)
            with open(os.path.join(root, 'manifest.json'), 'w') as f:
                json.dump([{'Config': cfg_name, 'RepoTags': ['test:' + spec.get('tag', 'latest')],
                            'Layers': paths}], f)
            subprocess.run(['tar', '-cf', out, '-C', root, '.'], check=True)
            print(json.dumps({'manifest': sha(config_b), 'config': sha(config_b), 'diff_ids': diff_ids}))
            return
        root = out if fmt == 'oci' else os.path.join(work, 'layout')
        os.makedirs(os.path.join(root, 'blobs', 'sha256'))

        def put(b):
            d = sha(b)
            with open(os.path.join(root, 'blobs', 'sha256', d[7:]), 'wb') as f:
                f.write(b)
            return d
        cfg_digest = put(config_b)
        for blob, digest, *_ in layers:
            shutil.copy(blob, os.path.join(root, 'blobs', 'sha256', digest[7:]))
        cfg_desc = {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': cfg_digest,
                    'size': len(config_b)}
        if corrupt == 'config-size':  # the descriptor's size a lie, the digest right
            cfg_desc['size'] += 1
        if corrupt == 'config-media-type':
            cfg_desc['mediaType'] = 'application/vnd.oci.image.index.v1+json'
        manifest = {'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
                    'config': cfg_desc,
                    'layers': [{'mediaType': mt, 'digest': dg, 'size': 0 if corrupt == 'layer-size-zero' else sz}
                               for _, dg, sz, _, mt in layers]}
        manifest_b = json.dumps(manifest, sort_keys=True).encode()
        man_digest = put(manifest_b)
        with open(os.path.join(root, 'index.json'), 'w') as f:
            json.dump({'schemaVersion': 2, 'manifests': [
                {'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': man_digest,
                 'size': len(manifest_b),
                 'annotations': {'org.opencontainers.image.ref.name': spec.get('tag', 'latest')}}]}, f)
        with open(os.path.join(root, 'oci-layout'), 'w') as f:
            json.dump({'imageLayoutVersion': '1.0.0'}, f)
        # Corruptions after the fact: the name (digest) stays, the content changes.
        victim = {'layer-digest': layers[-1][1] if layers else None, 'manifest': man_digest,
                  'config': cfg_digest}.get(corrupt)
        if victim:
            p = os.path.join(root, 'blobs', 'sha256', victim[7:])
            with open(p, 'r+b') as f:
                b = bytearray(f.read())
                b[len(b) // 2] ^= 0x01
                f.seek(0)
                f.write(b)
        if fmt == 'oci-archive':
            subprocess.run(['tar', '-cf', out, '-C', root, '.'], check=True)
        print(json.dumps({'manifest': man_digest, 'config': cfg_digest, 'diff_ids': diff_ids}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
