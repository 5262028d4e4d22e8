import stat

import pytest

from sparkdash.secretkey import default_key_path, local_secret_key

pytestmark = pytest.mark.backend_free


def test_it_keeps_the_key_in_the_users_config_folder():
    assert default_key_path({"HOME": "/home/ann"}).as_posix() == "/home/ann/.config/sparkdash/secret_key"
    assert default_key_path({"HOME": "/h", "XDG_CONFIG_HOME": "/c"}).as_posix() == "/c/sparkdash/secret_key"


def test_it_generates_a_key_once_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "sparkdash" / "secret_key"
    key = local_secret_key(path)
    assert len(key) >= 50 and local_secret_key(path) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(path.parent.iterdir()) == [path]


def test_it_refuses_a_key_file_others_can_read_or_a_published_key(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("x" * 60)
    path.chmod(0o644)
    with pytest.raises(ValueError, match="readable by other users: chmod 600"):
        local_secret_key(path)
    path.write_text("dev-only-insecure-key\n")
    path.chmod(0o600)
    with pytest.raises(ValueError, match="holds a published key"):
        local_secret_key(path)
