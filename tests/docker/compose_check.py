#!/usr/bin/env python3
# Checks docker/ without a Docker engine: compose.yaml parses and has the services README's
# "Deployment" names, every path the Dockerfiles and compose name exists, and every flag and
# subcommand the services run is one the built binaries accept (their --help). hadolint too,
# when installed. Run: ctest -R docker_compose_check   (or: tests/docker/compose_check.py build/bin)
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKER = os.path.join(ROOT, "docker")
DOCKERFILES = ["Dockerfile.server", "Dockerfile.worker", "Dockerfile.worker-cuda"]
problems = []


def check(condition, message):
    if not condition:
        problems.append(message)
    return condition


def dockerfile_steps(path):
    """(instruction, argument) pairs with continuation lines joined and comments dropped."""
    steps, current = [], ""
    for line in open(path):
        if line.lstrip().startswith("#"):
            continue
        current += line.rstrip("\n")
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if current.strip():
            instruction, _, argument = current.strip().partition(" ")
            steps.append((instruction.upper(), argument.strip()))
        current = ""
    return steps


def repo_paths_in(text):
    """scripts/..., docker/..., web, suite... paths a command names, relative to the repository."""
    return re.findall(r"(?<![\w/.-])((?:scripts|docker|web|suite|bench)/[\w./-]*\w)", text)


def check_dockerfile(name):
    path = os.path.join(DOCKER, name)
    if not check(os.path.isfile(path), "missing docker/%s" % name):
        return []
    steps = dockerfile_steps(path)
    check(steps and steps[0][0] == "FROM", "%s: does not start with FROM" % name)
    make_targets = set(re.findall(r"^([a-z-]+):", open(os.path.join(ROOT, "Makefile")).read(), re.M))
    commands = []
    for instruction, argument in steps:
        if instruction in ("COPY", "ADD"):
            sources = [word for word in argument.split()[:-1] if not word.startswith("--")]
            for source in sources:  # the build context is the repository root (compose: context ..)
                check(os.path.exists(os.path.join(ROOT, source)), "%s: COPY source %s does not exist" % (name, source))
        if instruction == "RUN":
            for rel in repo_paths_in(argument):
                full = os.path.join(ROOT, rel)
                if check(os.path.exists(full), "%s: RUN names %s, which does not exist" % (name, rel)):
                    if rel.endswith(".sh") and re.search(r"(^|[\s&;])%s" % re.escape(rel), argument):
                        check(os.access(full, os.X_OK), "%s: %s is run directly but not executable" % (name, rel))
            for target in re.findall(r"(?:^|&&|;)\s*make\s+([a-z-]+)", argument):
                check(target in make_targets, "%s: make %s is not a Makefile target" % (name, target))
            for flag in re.findall(r"install-deps\.sh\s+(--[\w-]+)", argument):
                check(flag in open(os.path.join(ROOT, "scripts/install-deps.sh")).read(),
                      "%s: install-deps.sh does not know %s" % (name, flag))
            for option in re.findall(r"-D(KFORGE_\w+)=", argument):
                check(option in open(os.path.join(ROOT, "CMakeLists.txt")).read() or
                      option in open(os.path.join(ROOT, "tests/CMakeLists.txt")).read(),
                      "%s: -D%s is not a CMake option" % (name, option))
        if instruction == "CMD":
            commands.append(argument)
    return commands


def help_text(bin_dir, program, cache={}):
    if program not in cache:
        exe = os.path.join(bin_dir, program)
        if not check(os.access(exe, os.X_OK), "%s is not built in %s" % (program, bin_dir)):
            cache[program] = ""
        else:
            run = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
            cache[program] = run.stdout + run.stderr
    return cache[program]


def check_command(bin_dir, where, words):
    """Every kforge binary in a command line: its subcommands and flags appear in its --help."""
    for idx, word in enumerate(words):
        program = os.path.basename(word)
        if program not in ("kforge-server", "kforge-worker", "kforge"):
            continue
        usage = help_text(bin_dir, program)
        if not usage:
            continue
        for arg in words[idx + 1:]:
            if arg in ("&&", ";", "|") or arg.startswith("kforge"):
                break
            if arg.startswith("--"):
                flag = arg.split("=")[0]
                check(re.search(r"(^|\s)%s(\s|=|$)" % re.escape(flag), usage, re.M),
                      "%s: %s does not accept %s (not in its --help)" % (where, program, flag))
            elif not arg.startswith("-") and not re.match(r"^[\d./]", arg) and arg == words[idx + 1]:
                check(re.search(r"\b%s\b" % re.escape(arg), usage),
                      "%s: %s has no subcommand %s (not in its --help)" % (where, program, arg))


def split_command(command):
    if isinstance(command, list):
        text = " ".join(command)
    else:
        text = command
        try:  # exec form: CMD ["sh", "-c", "..."]
            import json
            text = " ".join(json.loads(command))
        except ValueError:
            pass
    return text.replace("&&", " && ").split()


def check_env(bin_dir, where, env):
    """KFORGE_* variables a service sets are ones some binary reads (their --help tables)."""
    known = help_text(bin_dir, "kforge-server") + help_text(bin_dir, "kforge-worker")
    readme = open(os.path.join(ROOT, "README.md")).read()
    for key in env:
        if key.startswith("KFORGE_"):
            check(key in known or key in readme, "%s: %s is read by no binary (--help) nor documented" % (where, key))


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin")
    try:
        import yaml
    except ImportError:
        print("SKIPPED: python3-yaml is not installed (scripts/install-deps.sh installs it)")
        return 77
    compose_path = os.path.join(DOCKER, "compose.yaml")
    compose = yaml.safe_load(open(compose_path))
    services = compose.get("services", {})
    for service in ("postgres", "server", "nginx", "worker", "worker-gpu"):
        check(service in services, "compose.yaml: no service %s" % service)
    check(any(v.split(":")[0] in compose.get("volumes", {}) for v in services.get("postgres", {}).get("volumes", [])),
          "compose.yaml: postgres keeps its data in no named volume")
    gpu = services.get("worker-gpu", {})
    check(gpu.get("profiles") == ["gpu"], "compose.yaml: worker-gpu is not in the gpu profile")
    check(gpu.get("runtime") == "nvidia", "compose.yaml: worker-gpu does not use the NVIDIA runtime")

    for name in DOCKERFILES:
        for command in check_dockerfile(name):
            check_command(bin_dir, "docker/" + name + " CMD", split_command(command))
        check_env(bin_dir, "docker/" + name, re.findall(r"\b(KFORGE_\w+)=", open(os.path.join(DOCKER, name)).read()))

    for service_name, service in services.items():
        where = "compose.yaml service %s" % service_name
        build = service.get("build")
        if build:
            context = os.path.normpath(os.path.join(DOCKER, build.get("context", ".")))
            check(os.path.isdir(context), "%s: build context %s does not exist" % (where, context))
            dockerfile = build.get("dockerfile", "Dockerfile")
            check(os.path.isfile(os.path.join(context, dockerfile)), "%s: no Dockerfile %s" % (where, dockerfile))
            check(os.path.basename(dockerfile) in DOCKERFILES, "%s: %s is not checked here" % (where, dockerfile))
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                check(os.path.exists(os.path.join(DOCKER, source)), "%s: bind mount %s does not exist" % (where, source))
        if "command" in service:
            check_command(bin_dir, where, split_command(service["command"]))
        check_env(bin_dir, where, [key for key in service.get("environment", {}) if key != "<<"])

    # nginx in front of the server: the upstream is the server service on its port, and nginx's
    # body limit is the server's (else nginx would pass bodies the server rejects, or refuse ones it takes).
    nginx = open(os.path.join(DOCKER, "nginx.conf")).read()
    server_command = " ".join(split_command(services.get("server", {}).get("command", [])))
    port = re.search(r"--port\s+(\d+)", server_command)
    check(port and re.search(r"server\s+server:%s;" % port.group(1), nginx),
          "nginx.conf: the upstream is not the server service on its --port")
    limit = re.search(r"client_max_body_size\s+(\d+)m;", nginx)
    server_limit = services.get("server", {}).get("environment", {}).get("KFORGE_MAX_BODY_BYTES")
    check(limit and server_limit and int(limit.group(1)) * 1024 * 1024 == int(server_limit),
          "nginx.conf: client_max_body_size differs from the server's KFORGE_MAX_BODY_BYTES")
    for directive in ("gzip on;", "proxy_read_timeout", "root /srv/kforge/web;"):
        check(directive in nginx, "nginx.conf: no %s" % directive)

    hadolint = shutil.which("hadolint")
    if hadolint:
        for name in DOCKERFILES:
            run = subprocess.run([hadolint, os.path.join(DOCKER, name)], capture_output=True, text=True)
            check(run.returncode == 0, "hadolint %s:\n%s" % (name, run.stdout))
    else:
        print("hadolint: not installed (Debian 12 does not package it); Dockerfile lint skipped")

    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print("docker/: compose.yaml, %s, nginx.conf checked" % ", ".join(DOCKERFILES))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
