"""The server's policy on what an endpoint may take: key variable names, hosts and headers."""

from __future__ import annotations

import pytest

from evalcore.errors import ConfigError, JudgeError
from evalcore.judge import Endpoint, resolve_api_key
from evalcore.secrets import (
    MAX_DEPTH,
    MAX_ENTRIES,
    check_base_url,
    check_headers,
    check_key_name,
    host_allowed,
    key_name_allowed,
    key_name_denied,
    key_status,
    looks_secret,
)

# --- key variable names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MISTRAL_API_KEY",
        "AZURE_OPENAI_API_KEY",  # an Azure model key, not the SDK's sign-in
        "GOOGLE_API_KEY",
        "VLLM2_API_KEY",
        "openai.api_key",  # a table in secrets.toml
        "judge.openai_api_key",
        "Team.Judge.API_KEY",
    ],
)
def test_names_ending_in_api_key_are_allowed_by_default(name: str) -> None:
    assert key_name_allowed(name)
    assert check_key_name(f"  {name} ") == name


@pytest.mark.parametrize(
    "name",
    [
        "HOME",
        "PATH",
        "OPENAI_KEY",
        "HF_TOKEN",
        "openai_api_key",  # environment names are in capitals
        "_API_KEY",
        "1_API_KEY",
        "API_KEY",  # a bare name says nothing about which service
        "openai.token",
        "OPENAI-API-KEY",
        "",
        "a..b",
    ],
)
def test_other_names_are_refused_by_default(name: str) -> None:
    assert not key_name_allowed(name)
    with pytest.raises(ConfigError, match=r"(An admin can allow|never allowed)"):
        check_key_name(name)


@pytest.mark.parametrize(
    "name",
    [
        # evalcore's own settings
        "EVALCORE_DATABASE_URL",
        "EVALCORE_JUDGE_API_KEY",
        # databases
        "DATABASE_URL",
        "APP_DATABASE_URL",
        "ANALYTICS_DB_URL",
        "SENTRY_DSN",
        "PGPASSWORD",
        "PGHOST",
        "POSTGRES_PASSWORD",
        "POSTGRES_API_KEY",
        "MYSQL_PWD",
        "MARIADB_ROOT_PASSWORD",
        "MONGO_URL",
        "REDIS_URL",
        "REDIS_API_KEY",
        "SQLALCHEMY_DATABASE_URI",
        # cloud SDK credentials
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEDROCK_API_KEY",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PATH",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_PASSWORD",
        "AZURE_STORAGE_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLIENT_SECRET",
        "GCP_SERVICE_ACCOUNT_KEY",
        "GCP_API_KEY",
        # names that say what they hold
        "SMTP_PASSWORD",
        "LDAP_PASSWD",
        "JWT_SECRET",
        "DJANGO_SECRET_KEY",
        "MY_SECRET_ACCESS_API_KEY",
        "GITHUB_SESSION_TOKEN",
        "DEPLOY_PRIVATE_KEY",
        "SSH_PRIVATE_KEY_API_KEY",
        # Streamlit's own tables and secret-named parts of dotted names
        "auth.client_secret",
        "auth.cookie_secret",
        "auth.client_id",
        "connections.db.password",
        "connections.judge.api_key",
        "db.postgres_api_key",
        "cloud.aws_access_key_id",
        "app.evalcore_database_url",
        "deploy.secret_api_key",
    ],
)
def test_denied_names_stay_denied_even_when_an_admin_allows_them(name: str) -> None:
    assert key_name_denied(name)
    assert not key_name_allowed(name)
    assert not key_name_allowed(name, [name])
    with pytest.raises(ConfigError, match="never allowed") as caught:
        check_key_name(name, [name])
    assert "_API_KEY" in str(caught.value)


def test_an_admin_allows_other_names_one_by_one() -> None:
    assert not key_name_allowed("HF_TOKEN")
    assert key_name_allowed("HF_TOKEN", ["HF_TOKEN", " VLLM_KEY "])
    assert key_name_allowed("VLLM_KEY", ["HF_TOKEN", " VLLM_KEY "])
    assert not key_name_allowed("OTHER_TOKEN", ["HF_TOKEN"])
    assert key_name_allowed("judge.token", ["judge.token"])
    assert check_key_name("HF_TOKEN", ("HF_TOKEN",)) == "HF_TOKEN"


def test_the_refusal_says_what_is_allowed_and_that_an_admin_can_allow_more() -> None:
    with pytest.raises(ConfigError) as caught:
        check_key_name("HF_TOKEN")
    message = str(caught.value)
    assert "'HF_TOKEN'" in message
    assert "end in _API_KEY" in message
    assert "An admin can allow another name" in message


def test_a_malformed_name_is_not_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        check_key_name("sk-abc def")
    assert "sk-abc" not in str(caught.value)


# --- key status (for admins) and key lookup -------------------------------------------------------


def test_key_status_tells_set_missing_and_not_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATUS_TEST_API_KEY", "value")
    monkeypatch.delenv("STATUS_GONE_API_KEY", raising=False)
    monkeypatch.setenv("EVALCORE_DATABASE_URL", "sqlite:///x")
    monkeypatch.setenv("STATUS_TOKEN", "value")
    assert key_status("STATUS_TEST_API_KEY") == "set"
    assert key_status("STATUS_GONE_API_KEY") == "missing"
    assert key_status("STATUS_GONE_API_KEY", {"STATUS_GONE_API_KEY": "v"}) == "set"
    assert key_status("judge.api_key", {"judge": {"api_key": "v"}}) == "set"
    assert key_status("judge.api_key", {"judge": {"api_key": 3}}) == "missing"
    assert key_status("EVALCORE_DATABASE_URL") == "not allowed"  # set, yet never looked up
    assert key_status("STATUS_TOKEN") == "not allowed"
    assert key_status("STATUS_TOKEN", allowed=["STATUS_TOKEN"]) == "set"


def _server_endpoint(name: str | None, allowed: tuple[str, ...] = ()) -> Endpoint:
    return Endpoint(
        "judge", base_url="http://127.0.0.1:9/v1", api_key_env=name, allowed_key_names=allowed
    )


def test_under_the_server_policy_a_refused_and_a_missing_key_read_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALCORE_DATABASE_URL", "postgresql://u:database-password@h/db")
    monkeypatch.delenv("ABSENT_API_KEY", raising=False)
    messages = []
    for name in ("EVALCORE_DATABASE_URL", "ABSENT_API_KEY"):
        with pytest.raises(JudgeError) as caught:
            resolve_api_key(_server_endpoint(name), {"EVALCORE_DATABASE_URL": "also-secret"})
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0] == (
        "the endpoint's API key is not available on the server; ask an admin to check endpoint "
        "'judge'"
    )


def test_under_the_server_policy_an_allowed_key_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_TEST_API_KEY", "the-key")
    monkeypatch.setenv("POLICY_TOKEN", "other-key")
    assert resolve_api_key(_server_endpoint("POLICY_TEST_API_KEY")) == "the-key"
    assert resolve_api_key(_server_endpoint("POLICY_TOKEN", ("POLICY_TOKEN",))) == "other-key"
    with pytest.raises(JudgeError, match="not available"):
        resolve_api_key(_server_endpoint("POLICY_TOKEN"))
    assert resolve_api_key(_server_endpoint(None)) == "no-key-needed"


def test_an_endpoint_of_ones_own_machine_may_name_any_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the CLI's --api-key-env: no server policy, and the message names the variable
    monkeypatch.setenv("MY_LOCAL_TOKEN", "local-key")
    own = Endpoint("cli", base_url="http://127.0.0.1:9/v1", api_key_env="MY_LOCAL_TOKEN")
    assert own.allowed_key_names is None
    assert resolve_api_key(own) == "local-key"
    monkeypatch.delenv("MY_LOCAL_TOKEN")
    with pytest.raises(JudgeError, match="MY_LOCAL_TOKEN"):
        resolve_api_key(own)


# --- base URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "hosts", "allowed"),
    [
        ("https://api.openai.com/v1", (), True),
        ("http://127.0.0.1:8000/v1", (), True),
        ("https://api.openai.com/v1", ("api.openai.com",), True),
        ("https://API.OpenAI.com./v1", ("api.openai.com",), True),
        ("https://api.openai.com:443/v1", ("api.openai.com",), True),
        ("https://eu.api.openai.com/v1", ("api.openai.com",), False),
        ("https://gw.corp.example.com/v1", (".example.com",), True),
        ("https://a.b.example.com/v1", (".Example.com",), True),
        ("https://example.com/v1", (".example.com",), False),
        ("https://badexample.com/v1", (".example.com",), False),
        ("https://example.com.evil.test/v1", (".example.com", "example.com"), False),
        ("https://evil.test/v1", ("api.openai.com", "127.0.0.1"), False),
        ("http://127.0.0.1:8000/v1", ("127.0.0.1",), True),
        ("https://me:pw@api.openai.com/v1", (), False),
        ("https://me@api.openai.com/v1", ("api.openai.com",), False),
        ("https://api.openai.com@evil.test/v1", ("api.openai.com",), False),
        ("ftp://api.openai.com/v1", (), False),
        ("file:///etc/passwd", (), False),
        ("api.openai.com/v1", (), False),
        ("https:///v1", (), False),
        ("https://api.openai.com:port/v1", (), False),
    ],
)
def test_host_allowed(url: str, hosts: tuple[str, ...], allowed: bool) -> None:
    assert host_allowed(url, hosts) is allowed


def test_check_base_url_says_why() -> None:
    assert check_base_url(" https://api.openai.com/v1 ", ["api.openai.com"]) == (
        "https://api.openai.com/v1"
    )
    with pytest.raises(ConfigError, match="http:// or https://"):
        check_base_url("ftp://api.openai.com")
    with pytest.raises(ConfigError, match="user name or password") as caught:
        check_base_url("https://admin:hunter2@api.openai.com/v1")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"'evil\.test' is not one") as caught:
        check_base_url("https://evil.test/v1", ["api.openai.com", ".example.com"])
    assert "api.openai.com, .example.com" in str(caught.value)
    with pytest.raises(ConfigError, match="no host"):
        check_base_url("https:///v1", ["api.openai.com"])


@pytest.mark.parametrize(
    "url",
    [
        "https://h.test/v1?api_key=abc",
        "https://h.test/v1?token=abc",
        "https://h.test/v1?x=sk-abcdef",
        "https://h.test/v1?sig=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    ],
)
def test_a_credential_in_the_query_string_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="query parameter") as caught:
        check_base_url(url)
    assert url.split("=", 1)[1] not in str(caught.value)


def test_a_harmless_query_string_is_kept() -> None:
    url = "https://r.openai.azure.com/openai?api-version=2024-10-21"
    assert check_base_url(url) == url


# --- headers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "authorization",
        "Proxy-Authorization",
        "api-key",
        "Api_Key",
        "X-Api-Key",
        "Cookie",
        "Set-Cookie",
        "X-Auth-Token",
        "X-Client-Secret",
        "X-Password",
        "OpenAI-Key",
        "X-Goog-Credentials",
    ],
)
def test_credential_header_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="key variable") as caught:
        check_headers({"headers": {name: "harmless"}}, path="extra")
    assert f"extra.headers.{name} is a credential header" in str(caught.value)


@pytest.mark.parametrize(
    "value",
    [
        "Bearer abc",
        "bearer   abc",
        "Basic dXNlcjpwYXNz",
        "Token abc",
        "sk-proj-0123456789",
        "sk_live_abc",
        "gsk_0123",
        "hf_abcdef",
        "AIzaSyA-0123456789",
        "ghp_0123456789abcdef",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "aGVsbG8td29ybGQtMTIzNDU2.c2Vjb25kLXBhcnQtMTIzNDU2.dGhpcmQtcGFydC0xMjM0NTY",
        "3f9a1c0e7b2d4a6f8e1c3b5d7f9a0c2e",
        "Xk9pQ2vL7mN3rT8wZ1yB4cF6hJ0dG5sA",
    ],
)
def test_secret_looking_values_are_refused_without_being_repeated(value: str) -> None:
    with pytest.raises(ConfigError, match="looks like a key or token") as caught:
        check_headers({"X-Team": value})
    assert "headers.X-Team" in str(caught.value)
    assert value not in str(caught.value)


@pytest.mark.parametrize(
    "value",
    [
        "application/json",
        "evals-team",
        "org-AbCdEf0123456789xyz",  # an OpenAI organisation id
        "123e4567-e89b-12d3-a456-426614174000",  # a request id
        "api.example.com",
        "Mozilla/5.0 (X11; Linux x86_64) evalcore/1.0",
        "2024-10-21",
        "",
    ],
)
def test_ordinary_values_pass(value: str) -> None:
    assert not looks_secret(value)
    assert check_headers({"X-Thing": value}) == {"X-Thing": value}


def test_nested_settings_are_walked_and_the_path_named() -> None:
    benign = {"headers": {"X-Team": "evals"}, "timeout": 30, "tags": ["a", {"b": [1, 2.5, None]}]}
    assert check_headers(benign, path="extra") == benign
    with pytest.raises(ConfigError, match=r"extra\.proxy\.upstream\[1\]\.Authorization"):
        check_headers({"proxy": {"upstream": [{}, {"Authorization": "x"}]}}, path="extra")
    with pytest.raises(ConfigError, match=r"extra\.profiles\[0\]\[2\] looks like"):
        check_headers({"profiles": [["a", "b", "Bearer abc"]]}, path="extra")


def test_nesting_and_size_are_bounded() -> None:
    deep: dict = {}
    node = deep
    for _ in range(MAX_DEPTH + 2):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ConfigError, match="nest more than"):
        check_headers(deep)
    very_deep: list = []
    for _ in range(50_000):  # far past Python's recursion limit: refused, not a RecursionError
        very_deep = [very_deep]
    with pytest.raises(ConfigError, match="nest more than"):
        check_headers(very_deep)
    with pytest.raises(ConfigError, match=f"at most {MAX_ENTRIES}"):
        check_headers({"list": list(range(MAX_ENTRIES + 1))})


def test_the_policy_module_is_a_leaf() -> None:
    """evalcore.secrets imports only evalcore.errors and the standard library."""
    import ast
    import sys
    from pathlib import Path

    import evalcore.secrets

    tree = ast.parse(Path(evalcore.secrets.__file__).read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    outside = {n for n in names if n.split(".")[0] not in sys.stdlib_module_names}
    assert outside == {"evalcore.errors"}
