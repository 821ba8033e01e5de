"""fix-links.test.py DDPGUARD INPUT DIR -- FLAGS: runs ddpguard --fix on
symbolic and hard links and checks what happened to the files."""
import os
import shutil
import stat
import subprocess
import sys

ddpguard, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
flags = sys.argv[sys.argv.index("--") + 1:]
FIXED = "DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));"


def fix(*paths, expect=0):
    result = subprocess.run([ddpguard, "--fix", *paths, "--", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert result.returncode == expect, (result.returncode, result.stderr)
    return result


def copy(name, mode=0o640):
    path = os.path.join(work, name)
    shutil.copy(source, path)
    os.chmod(path, mode)
    return path


# A symbolic link: the link stays, the target is fixed, its mode is kept.
os.makedirs(os.path.join(work, "real"))
target = copy("real/target.cpp")
link = os.path.join(work, "link.cpp")
os.symlink(os.path.join("real", "target.cpp"), link)
fix(link)
assert os.path.islink(link), "the symbolic link was replaced"
assert os.readlink(link) == os.path.join("real", "target.cpp")
assert FIXED in open(target).read(), "the target was not fixed"
assert stat.S_IMODE(os.stat(target).st_mode) == 0o640, oct(os.stat(target).st_mode)

# Through the link and directly at once: one fix, no overlap, no error.
both = copy("both.cpp")
both_link = os.path.join(work, "both-link.cpp")
os.symlink("both.cpp", both_link)
fix(both, both_link)
assert open(both).read().count("broadcast_buffers(false)") == 1
assert os.path.islink(both_link)

# Hard links: still one inode, every name sees the fix.
first = copy("first.cpp", 0o664)
second = os.path.join(work, "second.cpp")
os.link(first, second)
inode = os.stat(first).st_ino
fix(first)
assert os.stat(first).st_ino == inode and os.stat(second).st_ino == inode
assert os.stat(first).st_nlink == 2
assert FIXED in open(second).read(), "the other hard link was not fixed"
assert stat.S_IMODE(os.stat(first).st_mode) == 0o664

# Owner and group are kept (only root can make a file someone else's).
if os.geteuid() == 0:
    owned = copy("owned.cpp", 0o644)
    os.chown(owned, 65534, 65534)
    fix(owned)
    status = os.stat(owned)
    assert (status.st_uid, status.st_gid) == (65534, 65534), status
    assert FIXED in open(owned).read()

assert not [n for n in os.listdir(work) if ".ddpguard-" in n], os.listdir(work)
