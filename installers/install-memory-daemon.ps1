<#
.SYNOPSIS
  Install velesdb-memory as an autostarted HTTPS daemon on Windows and wire every MCP client to it.

.DESCRIPTION
  Thin on purpose: it makes a virtual environment, pip-installs velesmem, then calls the Python
  subcommands that do the work (and are tested on every OS):
    velesdb-memory service install   a per-user Scheduled Task \VelesDB\MemoryDaemon (no admin)
    velesdb-memory service wait      /health over strict TLS against the daemon's own CA
    velesdb-memory trust-ca          the CA in Cert:\CurrentUser\Root (thumbprint checked first)
    velesdb-memory wire              Claude Code, Codex, Claude Desktop, Cursor, Windsurf, Devin CLI
  Re-running is idempotent. -Uninstall removes the task and our client entries only: never the
  store, the CA or its trust. See docs/installers.md.

  Environment:
    VELESMEM_INSTALL_VENV    the virtual environment (default %USERPROFILE%\.velesdb-memory-venv)
    VELESMEM_INSTALL_SOURCE  what pip installs (default: this checkout when run from one, else
                             "velesmem" from PyPI)
    VELESMEM_INSTALL_PYTHON  an interpreter that already has velesmem: skip the venv and pip
    VELESMEM_INSTALL_MANAGER force the service manager (default: auto = Scheduled Task)

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
    [string]$Embedder = "",
    [string]$OllamaUrl = "",
    [string]$OllamaModel = "",
    [string]$ExtractorModel = "",
    [int]$Ttl = 0,
    [string[]]$SkipClient = @(),
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

function Die([string]$Message) {
    [Console]::Error.WriteLine("install-memory-daemon.ps1: $Message")
    exit 2
}

$Summary = (New-TemporaryFile).FullName
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
    if ($failed) { exit 1 }
    exit 0
}

if ($Port -ne 0 -and ($Port -lt 1 -or $Port -gt 65535)) { Die "-Port $Port is out of range 1-65535" }
if ($Ttl -lt 0) { Die "-Ttl must be a positive number of seconds" }

# --- the interpreter that runs velesmem ------------------------------------------------------
$Venv = if ($env:VELESMEM_INSTALL_VENV) { $env:VELESMEM_INSTALL_VENV } else { Join-Path $env:USERPROFILE ".velesdb-memory-venv" }
$Checkout = Split-Path -Parent $PSScriptRoot
if ($env:VELESMEM_INSTALL_SOURCE) {
    $Source = $env:VELESMEM_INSTALL_SOURCE
} elseif ((Test-Path (Join-Path $Checkout "pyproject.toml")) -and
          (Select-String -Quiet -Pattern '^name = "velesmem"' -Path (Join-Path $Checkout "pyproject.toml"))) {
    $Source = $Checkout
} else {
    $Source = "velesmem"
}

if (-not $Uninstall -and -not $WireOnly -and -not $Yes -and [Environment]::UserInteractive -and -not [Console]::IsInputRedirected) {
    Write-Host "This installs velesdb-memory (venv $Venv, from $Source), starts it as an autostarted"
    Write-Host "HTTPS daemon (Scheduled Task \VelesDB\MemoryDaemon) and wires your MCP clients to it."
    $answer = Read-Host "Proceed? [y/N]"
    if ($answer -notmatch '^(y|yes)$') { Write-Host "aborted"; exit 1 }
}

if ($env:VELESMEM_INSTALL_PYTHON) {
    $Py = $env:VELESMEM_INSTALL_PYTHON
    Note "skipped" "virtual environment + pip install" "VELESMEM_INSTALL_PYTHON=$Py is used as is"
} elseif ($Uninstall -or $WireOnly) {
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
    if ($LASTEXITCODE -ne 0) { Die "Python 3.11 or newer is required" }
    $Py = Join-Path $Venv "Scripts\python.exe"
    if (-not (Test-Path $Py)) {
        Write-Host "creating the virtual environment $Venv"
        & $pyExe @pyArgs -m venv $Venv
        if ($LASTEXITCODE -ne 0) { Die "python -m venv $Venv failed" }
        Note "done" "virtual environment $Venv"
    } else {
        Note "skipped" "virtual environment $Venv" "already exists"
    }
    Write-Host "installing velesmem from $Source"
    & $Py -m pip install --quiet --disable-pip-version-check $Source
    if ($LASTEXITCODE -ne 0) { Die "pip install $Source failed" }
    Note "done" "pip install $Source"
}
& $Py -c "import velesmem" 2>$null
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

function Vm {
    # Out-Host keeps the command's output off this function's return value (only the bool).
    & $Py -m velesmem @args | Out-Host
    return ($LASTEXITCODE -eq 0)
}

# --- uninstall: task + our client entries; never the store, the CA or the trust ---------------
if ($Uninstall) {
    if (-not (Vm service uninstall --summary $Summary)) { Note "failed" "service uninstall" "see the messages above" }
    $null = Vm wire --uninstall @WireArgs --summary $Summary
    Note "skipped" "store, CA and CA trust" "never removed by the uninstaller (see docs/installers.md)"
    if (-not $env:VELESMEM_INSTALL_PYTHON) {
        Note "skipped" "virtual environment $Venv" "kept; delete the folder to remove velesmem itself"
    }
    Finish
}

# --- install ---------------------------------------------------------------------------------
if ($WireOnly) {
    Note "skipped" "service install and CA trust" "-WireOnly"
} else {
    if (-not (Vm service install @ServiceArgs --summary $Summary)) {
        Note "failed" "install stopped" "the daemon is not running, so no client was wired"
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
}
$null = Vm wire @WireArgs --summary $Summary
Finish
