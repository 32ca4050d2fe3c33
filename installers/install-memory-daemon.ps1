<#
.SYNOPSIS
  Install velesdb-memory as an autostarted HTTPS daemon on Windows and wire every MCP client to it.

.DESCRIPTION
  Thin on purpose: it makes a virtual environment, pip-installs velesmem, then calls the Python
  subcommands that do the work (and are tested on every OS):
    velesdb-memory prepare-model     the local model's int8 graph, derived once beside the install
    velesdb-memory service install   a per-user Scheduled Task \VelesDB\MemoryDaemon (no admin)
    velesdb-memory service wait      /health over strict TLS against the daemon's own CA
    velesdb-memory trust-ca          the CA in Cert:\CurrentUser\Root (thumbprint checked first)
    velesdb-memory wire              the clients installed here: Claude Code (and its session hooks),
                                     Codex, Claude Desktop, Cursor, Windsurf, Devin CLI, Cline, Zed,
                                     opencode, Gemini CLI, Qwen Code, Copilot CLI (stdio entries)
    velesdb-memory skills install    the agent skills: ~\.claude\skills (read by opencode too), and
                                     ~\.agents\skills when Codex is installed
  `service install` also writes the installer record every later command reads the daemon's
  port, store, TLS dir and embedder from (%LOCALAPPDATA%\velesdb-memory\installed.json).
  Re-running is idempotent; a re-run that finds the same velesmem version installed skips pip
  (-Reinstall forces it). -Uninstall removes our client entries and the task only: never the
  store, the CA or its trust. See docs/installers.md.

  -FromRelease installs a released velesmem from the package index instead of this checkout:
  pinned to -FromReleaseTag <VERSION> (default: the newest published), its file's SHA-256 checked
  against -Sha256 <HEX> (refused on mismatch; -SkipChecksum to install it unchecked).

  Environment:
    VELESMEM_INSTALL_VENV    the virtual environment (default %USERPROFILE%\.velesdb-memory-venv)
    VELESMEM_INSTALL_SOURCE  what pip installs (default: this checkout)
    VELESMEM_INSTALL_EXTRAS  extras installed with it (default embed; empty: hash embedder only)
    VELESMEM_INSTALL_PYTHON  an interpreter that already has velesmem: skip the venv and pip
    VELESMEM_INSTALL_MANAGER force the service manager (default: auto = Scheduled Task)
    VELESMEM_INSTALL_TOKEN   the bearer token, as -Token (which wins)

  -Token <TOKEN> is the bearer token every client sends, for a daemon that requires one
  (velesdb-memory token create; docs/auth.md); VELESMEM_INSTALL_TOKEN keeps it out of the
  process list.

.EXAMPLE
  pwsh -File installers\install-memory-daemon.ps1 -Yes
.EXAMPLE
  pwsh -File installers\install-memory-daemon.ps1 -Port 18091 -SkipClient cursor,windsurf
#>
[CmdletBinding()]
param(
    [int]$Port = 0,
    [string]$Store = "",
    [string]$TlsDir = "",
    [ValidateSet("", "hash", "local", "ollama", "openai")][string]$Embedder = "",
    [string]$OllamaUrl = "",
    [string]$OllamaModel = "",
    [string]$ExtractorModel = "",
    [int]$Ttl = 0,
    [string[]]$SkipClient = @(),
    [string]$Token = "",
    [switch]$FromRelease,
    [string]$FromReleaseTag = "",
    [string]$Sha256 = "",
    [switch]$SkipChecksum,
    [switch]$Reinstall,
    [switch]$SkipCaTrust,
    [switch]$WireOnly,
    [switch]$ForceRestart,
    [switch]$Uninstall,
    [switch]$Yes,
    [Alias("h")][switch]$Help
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"

if ($Help) {
    Get-Help -Detailed $PSCommandPath
    exit 0
}

function Die([string]$Message) {   # a bad flag: nothing was done
    [Console]::Error.WriteLine("install-memory-daemon.ps1: $Message")
    exit 2
}

function Fail([string]$Message) {  # could not do what was asked: nothing was installed
    [Console]::Error.WriteLine("install-memory-daemon.ps1: $Message")
    exit 1
}

if ($FromReleaseTag) { $FromRelease = $true }
if ($Sha256) {
    if (-not $FromRelease) { Die "-Sha256 checks a downloaded release: use it with -FromRelease" }
    if ($Sha256 -notmatch '^[0-9a-fA-F]{64}$') { Die "-Sha256 must be 64 hexadecimal digits" }
    if ($SkipChecksum) { Die "-Sha256 and -SkipChecksum contradict each other" }
    $Sha256 = $Sha256.ToLowerInvariant()
}
if ($SkipChecksum -and -not $FromRelease) { Die "-SkipChecksum only applies to -FromRelease" }
if ($FromRelease -and ($env:VELESMEM_INSTALL_SOURCE -or $env:VELESMEM_INSTALL_PYTHON)) {
    Die "-FromRelease installs a release into the virtual environment: unset VELESMEM_INSTALL_SOURCE and VELESMEM_INSTALL_PYTHON"
}

$Summary = (New-TemporaryFile).FullName
$Next = ""
function Note([string]$Status, [string]$Step, [string]$Detail = "") {
    Add-Content -LiteralPath $Summary -Value "$Status`t$Step`t$Detail" -Encoding utf8
}

function Finish {
    Write-Host ""
    Write-Host "velesdb-memory installer - summary"
    $failed = $false
    foreach ($line in Get-Content -LiteralPath $Summary -Encoding utf8) {
        $parts = $line -split "`t", 3
        if ($parts[0] -eq "failed") { $failed = $true }
        if ($parts.Count -ge 3 -and $parts[2]) {
            Write-Host ("  {0,-8} {1} - {2}" -f $parts[0], $parts[1], $parts[2])
        } else {
            Write-Host ("  {0,-8} {1}" -f $parts[0], $parts[1])
        }
    }
    Remove-Item -LiteralPath $Summary -Force
    if ($Next) { Write-Host ""; Write-Host $Next }
    if ($failed) { exit 1 }   # a warning (a client config we could not parse) is not a failure
    exit 0
}

if ($Port -ne 0 -and ($Port -lt 1 -or $Port -gt 65535)) { Die "-Port $Port is out of range 1-65535" }
if ($Ttl -lt 0) { Die "-Ttl must be a positive number of seconds" }

# --- what to install -------------------------------------------------------------------------
$Venv = if ($env:VELESMEM_INSTALL_VENV) { $env:VELESMEM_INSTALL_VENV } else { Join-Path $env:USERPROFILE ".velesdb-memory-venv" }
$Checkout = Split-Path -Parent $PSScriptRoot
$Source = ""
$SourceVersion = ""
if ($env:VELESMEM_INSTALL_SOURCE) {
    $Source = $env:VELESMEM_INSTALL_SOURCE
} elseif ($FromRelease) {
    $Source = "the package index"
} elseif ((Test-Path (Join-Path $Checkout "pyproject.toml")) -and
          (Select-String -Quiet -Pattern '^name = "velesmem"' -Path (Join-Path $Checkout "pyproject.toml"))) {
    $Source = $Checkout
}
$InitPy = if ($Source -and (Test-Path -PathType Container $Source)) { Join-Path $Source "velesmem\__init__.py" } else { "" }
if ($InitPy -and (Test-Path $InitPy)) {
    $m = Select-String -Path $InitPy -Pattern '^__version__ = "(.*)"$' | Select-Object -First 1
    if ($m) { $SourceVersion = $m.Matches[0].Groups[1].Value }
}
$NeedsPip = -not ($env:VELESMEM_INSTALL_PYTHON -or $Uninstall -or $WireOnly)
if ($NeedsPip -and -not $Source) {
    Fail ("this script is not inside a velesmem checkout, so there is nothing to install: clone the " +
          "repository and run installers\install-memory-daemon.ps1 from it (velesmem is not published " +
          "on the package index yet; once it is, -FromRelease installs a release)")
}

if (-not $Uninstall -and -not $WireOnly -and -not $Yes -and [Environment]::UserInteractive -and -not [Console]::IsInputRedirected) {
    Write-Host "This installs velesdb-memory (venv $Venv, from $Source), starts it as an autostarted"
    Write-Host "HTTPS daemon (Scheduled Task \VelesDB\MemoryDaemon) and wires your MCP clients to it."
    $answer = Read-Host "Proceed? [y/N]"
    if ($answer -notmatch '^(y|yes)$') { Write-Host "aborted"; exit 1 }
}

# The velesmem version installed in the interpreter's own environment ("" when none; -P: never a
# checkout in the current directory).
function Installed-Version([string]$Python) {
    $code = @'
import importlib.metadata as md, os, sys
try:
    dist = md.distribution("velesmem")
except md.PackageNotFoundError:
    sys.exit(1)
home = os.path.realpath(sys.prefix)
where = os.path.realpath(str(dist.locate_file("")))
if where != home and not where.startswith(home + os.sep):
    sys.exit(1)
print(dist.version)
'@
    $out = $code | & $Python -P - 2>$null   # on stdin: no native-argument quoting to get wrong
    if ($LASTEXITCODE -ne 0) { return "" }
    return "$out".Trim()
}

# -FromRelease: download the pinned release through pip, check its SHA-256, install that file.
function Fetch-Release {
    $want = if ($FromReleaseTag) { "velesmem==$FromReleaseTag" } else { "velesmem" }
    $dest = Join-Path ([System.IO.Path]::GetTempPath()) ("velesmem-release-" + [System.Guid]::NewGuid().ToString("N"))
    New-Item -ItemType Directory -Path $dest | Out-Null
    Write-Host "downloading $want from the package index"
    $said = & $Py -P -m pip download --quiet --disable-pip-version-check --no-deps --dest $dest $want 2>&1
    if ($LASTEXITCODE -ne 0) {
        $why = ($said | Select-String -Pattern "error" | Select-Object -Last 2) -join " "
        Fail ("$want is not on the package index (velesmem is not published there yet): run this script " +
              "from a clone of the repository instead, which installs that checkout. pip said: $why")
    }
    $file = Get-ChildItem -LiteralPath $dest -Filter "velesmem-*" -File | Select-Object -First 1
    if (-not $file) { Fail "pip downloaded no velesmem file for $want" }
    $got = (Get-FileHash -Algorithm SHA256 -LiteralPath $file.FullName).Hash.ToLowerInvariant()
    if ($SkipChecksum) {
        Note "skipped" "checksum of $($file.Name)" "-SkipChecksum (sha256 $got)"
    } elseif (-not $Sha256) {
        Fail ("refusing to install $($file.Name) unverified: pass -Sha256 <the SHA-256 published with the " +
              "release> (this file's is $got: compare the two), or -SkipChecksum to install it anyway")
    } elseif ($got -ne $Sha256) {
        Fail "checksum mismatch for $($file.Name): expected $Sha256, got $got - nothing was installed"
    } else {
        Note "done" "checksum of $($file.Name)" "sha256 $got matches -Sha256"
    }
    $script:Source = $file.FullName
    $v = $file.Name -replace '^velesmem-', ''
    if ($v -like "*.whl") { $v = ($v -split '-')[0] } else { $v = $v -replace '\.(tar\.gz|zip)$', '' }
    $script:SourceVersion = $v
}

# --- the interpreter that runs velesmem ------------------------------------------------------
if ($env:VELESMEM_INSTALL_PYTHON) {
    $Py = $env:VELESMEM_INSTALL_PYTHON
    Note "skipped" "virtual environment + pip install" "VELESMEM_INSTALL_PYTHON=$Py is used as is"
} elseif (-not $NeedsPip) {
    $Py = Join-Path $Venv "Scripts\python.exe"
    if (-not (Test-Path $Py)) {
        Die "no velesmem installation at $Venv (set VELESMEM_INSTALL_VENV or VELESMEM_INSTALL_PYTHON)"
    }
} else {
    # The py launcher when present (py -3), else python on PATH. @(...) keeps a one-item list a list.
    $launcher = Get-Command py -ErrorAction SilentlyContinue
    $python = @(if ($launcher) { $launcher.Source; "-3" } else { (Get-Command python -ErrorAction Stop).Source })
    $pyExe = $python[0]
    $pyArgs = @($python | Select-Object -Skip 1)
    & $pyExe @pyArgs -c "import sys; sys.exit(sys.version_info < (3, 11))"
    if ($LASTEXITCODE -ne 0) { Fail "Python 3.11 or newer is required" }
    $Py = Join-Path $Venv "Scripts\python.exe"
    if (-not (Test-Path $Py)) {
        Write-Host "creating the virtual environment $Venv"
        & $pyExe @pyArgs -m venv $Venv
        if ($LASTEXITCODE -ne 0) { Fail "python -m venv $Venv failed" }
        Note "done" "virtual environment $Venv"
    } else {
        Note "skipped" "virtual environment $Venv" "already exists"
    }
    $Have = Installed-Version $Py
    if ($FromReleaseTag -and $Have -eq $FromReleaseTag -and -not $Reinstall) {
        $SourceVersion = $FromReleaseTag   # pinned and already there: nothing to download
    } elseif ($FromRelease) {
        Fetch-Release
    }
    if ($Have -and $Have -eq $SourceVersion -and -not $Reinstall) {
        Note "skipped" "pip install $Source" "velesmem $Have is already installed in $Venv (-Reinstall to install it again)"
    } else {
        Write-Host "installing velesmem from $Source"
        $Extras = if ($null -ne $env:VELESMEM_INSTALL_EXTRAS) { $env:VELESMEM_INSTALL_EXTRAS } else { "embed" }
        $Target = if ($Extras) { "$Source[$Extras]" } else { $Source }
        & $Py -P -m pip install --quiet --disable-pip-version-check $Target
        if ($LASTEXITCODE -ne 0) { Fail "pip install $Target failed" }
        Note "done" "pip install $Target"
    }
}
& $Py -P -c "import velesmem" 2>$null
if ($LASTEXITCODE -ne 0) { Die "$Py cannot import velesmem" }

$DaemonArgs = @()
if ($Port -ne 0) { $DaemonArgs += @("--port", "$Port") }
if ($TlsDir) { $DaemonArgs += @("--tls-dir", $TlsDir) }
$ServiceArgs = @($DaemonArgs)
if ($Store) { $ServiceArgs += @("--store", $Store) }
if ($Embedder) { $ServiceArgs += @("--embedder", $Embedder) }
if ($Ttl -gt 0) { $ServiceArgs += @("--ttl", "$Ttl") }
if ($OllamaUrl) { $ServiceArgs += @("--ollama-url", $OllamaUrl) }
if ($OllamaModel) { $ServiceArgs += @("--ollama-model", $OllamaModel) }
if ($ExtractorModel) { $ServiceArgs += @("--extractor-model", $ExtractorModel) }
if ($ForceRestart) { $ServiceArgs += "--force-restart" }
if ($env:VELESMEM_INSTALL_MANAGER) { $ServiceArgs += @("--manager", $env:VELESMEM_INSTALL_MANAGER) }
$WireArgs = @($DaemonArgs)
foreach ($client in $SkipClient) { $WireArgs += @("--skip-client", $client) }
$SkillArgs = @("--target", "claude")
$CodexHome = if ($env:CODEX_HOME) { $env:CODEX_HOME } else { Join-Path $HOME ".codex" }
if ((Get-Command codex -ErrorAction SilentlyContinue) -or (Test-Path $CodexHome)) { $SkillArgs += @("--target", "codex") }

function Vm {
    # Out-Host keeps the command's output off this function's return value (only the bool).
    # -P: never the velesmem of the current directory (a checkout), only the installed one.
    & $Py -P -m velesmem @args | Out-Host
    return ($LASTEXITCODE -eq 0)
}

# --- uninstall: our client entries + the task; never the store, the CA or the trust -----------
if ($Uninstall) {
    # The clients first: the service's record still names the daemon's URL for the message.
    $null = Vm wire --uninstall @WireArgs --summary $Summary
    $null = Vm skills install --uninstall --target claude --target codex --summary $Summary
    if (-not (Vm service uninstall --summary $Summary)) { Note "failed" "service uninstall" "see the messages above" }
    Note "skipped" "store, CA and CA trust" "never removed by the uninstaller (see docs/installers.md)"
    if (-not $env:VELESMEM_INSTALL_PYTHON) {
        Note "skipped" "virtual environment $Venv" "kept; delete the folder to remove velesmem itself"
    }
    Finish
}

# --- velesdb-memory on PATH: say exactly where it is and how to add it -------------------------
$Scripts = Split-Path -Parent $Py
$Command = Join-Path $Scripts "velesdb-memory.exe"
if (-not (Test-Path $Command)) {
    Note "skipped" "velesdb-memory on PATH" "no velesdb-memory.exe beside $Py"
    $Next = "next: & '$Py' -m velesmem doctor"
} elseif (($env:Path -split ';') -contains $Scripts) {
    $Next = "next: velesdb-memory doctor"
} else {
    Note "warning" "velesdb-memory on PATH" "$Scripts is not on your PATH"
    $Next = ("velesdb-memory is $Command, and its folder is not on your PATH. Add it for new terminals:`n" +
             "  [Environment]::SetEnvironmentVariable('Path', '$Scripts;' + [Environment]::GetEnvironmentVariable('Path', 'User'), 'User')`n" +
             "and for this one: `$env:Path = '$Scripts;' + `$env:Path`n" +
             "then: velesdb-memory doctor   (or now: & '$Command' doctor)")
}

# --- install ---------------------------------------------------------------------------------
if ($WireOnly) {
    Note "skipped" "service install and CA trust" "-WireOnly"
} else {
    # The local model's int8 graph, derived now (seconds, once) so no daemon start pays for it.
    $ModelFile = & $Py -P -m velesmem prepare-model
    if ($LASTEXITCODE -eq 0) {
        Note "done" "local model prepared" $(if ($ModelFile) { "$ModelFile" } else { "nothing to prepare" })
    } else {
        Note "warning" "local model prepared" "prepare-model failed; the daemon derives it on its first start"
    }
    if (-not (Vm service install @ServiceArgs --summary $Summary)) {
        Note "failed" "install stopped" "the daemon is not running, so no client was wired"
        $Next = "the daemon's own words are above; fix that and re-run the installer"
        Finish
    }
    if (-not (Vm service wait @DaemonArgs --summary $Summary)) {
        Note "failed" "install stopped" "no /health"
        Finish
    }
    if ($SkipCaTrust) {
        Note "skipped" "CA trust" "-SkipCaTrust"
    } else {
        $null = Vm trust-ca @DaemonArgs --summary $Summary
    }
    # The dashboard's URL, in the summary (nothing is opened).
    $null = Vm open --print @DaemonArgs --summary $Summary
}
if (-not $Token) { $Token = "$env:VELESMEM_INSTALL_TOKEN" }
if ($Token) {
    # Through stdin: never in a process's arguments.
    $Token | & $Py -P -m velesmem wire --token - @WireArgs --summary $Summary | Out-Host
} else {
    $null = Vm wire @WireArgs --summary $Summary
}
$null = Vm skills install @SkillArgs --summary $Summary
Finish
