# Packer example: a Trn2 AMI with the Neuron PyTorch backend, using the same steps as the
# EC2 Image Builder component (scripts/imagebuilder/neuron-env.yaml).
#   packer init . && packer build -var region=us-east-2 \
#     -var neuron_env_source=s3://BUCKET/neuron-env/neuron_env-0.1.0-py3-none-any.whl \
#     -var neuron_env_sha256=$(sha256sum neuron_env-0.1.0-py3-none-any.whl | cut -d' ' -f1) .
# neuron-env is not published on the public index: give its wheel (a path on the build
# instance, an https:// or s3:// URL) with its sha256, or a pip spec with
# neuron_env_index_url, your own index (docs/bootstrap.md, "Where neuron-env comes from").
# The tests run these provisioners as shell, as Packer would (tests/integration/test_platform_*).
# The build instance may be a cheaper type than the target: doctor then runs with
# --instance-type (device checks skip); run `neuron-env doctor --smoke` on a Trn2 launched from
# the AMI (or use Image Builder's test phase) for the device test.
packer {
  required_version = ">= 1.10.0"
  required_plugins {
    amazon = {
      source  = "github.com/hashicorp/amazon"
      version = ">= 1.3.0"
    }
  }
}

variable "region" { type = string }
variable "build_instance_type" {
  type    = string
  default = "trn2.3xlarge"
}
variable "target_instance_type" {
  type    = string
  default = "trn2.48xlarge"
}
variable "neuron_env_source" {
  type        = string
  description = "neuron-env's wheel (path, https:// or s3:// URL) or a pip spec: no default"
}
variable "neuron_env_sha256" {
  type        = string
  default     = ""
  description = "the wheel's sha256 (required with a wheel)"
}
variable "neuron_env_index_url" {
  type        = string
  default     = ""
  description = "your own index serving neuron-env and its dependencies (with a pip spec)"
}
variable "python" {
  type    = string
  default = "python3"
}
variable "tool_venv" {
  type    = string
  default = "/opt/neuron-env"
}
variable "venv" {
  type    = string
  default = "/opt/neuron-venv"
}
variable "log_dir" {
  type    = string
  default = "/var/log/neuron-env"
}
variable "install_args" {
  type    = string
  default = ""
}
variable "doctor_args" {
  type    = string
  default = ""
}
variable "torch" {
  type    = string
  default = "2.14"
}

# The parent image must bring the Neuron kernel driver (aws-neuronx-dkms): neuron-env installs
# the PyTorch side only. The Neuron base DLAMI does; `neuron-env instance --dlami ubuntu-24.04`
# prints the multi-framework one. Neuron 2.33 names prebuilt TorchNeuron wheels for Ubuntu 26.04
# only (doctor warns on 24.04): point this at a 26.04 image with the driver where you have one.
variable "parent_image_parameter" {
  type    = string
  default = "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id"
}

data "amazon-parameterstore" "parent" {
  region = var.region
  name   = var.parent_image_parameter
}

source "amazon-ebs" "neuron" {
  region        = var.region
  instance_type = var.build_instance_type
  ami_name      = "neuron-env-torch-${var.torch}-{{timestamp}}"
  ssh_username  = "ubuntu"
  source_ami    = data.amazon-parameterstore.parent.value
}

build {
  sources = ["source.amazon-ebs.neuron"]

  # build: neuron-env itself (its wheel fetched and checked first, then installed), then the
  # backend
  provisioner "shell" {
    execute_command = "sudo -E bash -euo pipefail '{{ .Path }}'"
    inline = [
      "src='${var.neuron_env_source}' sha='${var.neuron_env_sha256}' index='${var.neuron_env_index_url}'",
      "case \"$src\" in *.whl) w=\"/tmp/$${src##*/}\"; case \"$src\" in s3://*) aws s3 cp --only-show-errors \"$src\" \"$w\" ;; http://* | https://*) curl -fsSL --retry 2 -o \"$w\" \"$src\" ;; *) cp -- \"$${src#file://}\" \"$w\" ;; esac; echo \"$sha  $w\" | sha256sum -c --quiet - || { echo \"neuron-env: $src does not match neuron_env_sha256\" >&2; exit 2; } ;; *) [ -n \"$index\" ] || { echo 'neuron-env: a pip spec needs neuron_env_index_url (neuron-env is not on the public index)' >&2; exit 2; } ;; esac",
      "${var.python} -m venv '${var.tool_venv}'",
      "pip=('${var.tool_venv}/bin/python' -m pip install --quiet --disable-pip-version-check); [ -z \"$index\" ] || pip+=(--index-url \"$index\"); \"$${pip[@]}\" -- \"$${w:-$src}\"",
      "'${var.tool_venv}/bin/neuron-env' --version",
      "mkdir -p '${var.log_dir}'",
      "'${var.tool_venv}/bin/neuron-env' install --yes --venv '${var.venv}' --python ${var.python} --torch ${var.torch} --format json ${var.install_args} > '${var.log_dir}/install.json'",
    ]
  }

  # validate: doctor for the target type (no --smoke: the build instance is often another type).
  # Its exit code is kept, the reports are fetched, THEN a failed validation fails the build:
  # the JUnit report is there exactly when it matters.
  provisioner "shell" {
    execute_command = "sudo -E bash -euo pipefail '{{ .Path }}'"
    inline = [
      "rc=0; '${var.tool_venv}/bin/neuron-env' doctor --python '${var.venv}/bin/python' --instance-type ${var.target_instance_type} --report 'json:${var.log_dir}/doctor-validate.json' --report 'junit:${var.log_dir}/doctor-validate.xml' ${var.doctor_args} || rc=$?",
      "echo \"$rc\" > '${var.log_dir}/doctor-validate.rc'",
    ]
  }

  provisioner "file" {
    direction   = "download"
    source      = "${var.log_dir}/doctor-validate.xml"
    destination = "reports/doctor-validate.xml"
  }

  provisioner "file" {
    direction   = "download"
    source      = "${var.log_dir}/doctor-validate.json"
    destination = "reports/doctor-validate.json"
  }

  provisioner "shell" {
    inline = [
      "rc=$(cat '${var.log_dir}/doctor-validate.rc'); [ \"$rc\" = 0 ] || { echo \"neuron-env doctor failed (exit $rc): see reports/doctor-validate.xml\" >&2; exit \"$rc\"; }",
    ]
  }
}
