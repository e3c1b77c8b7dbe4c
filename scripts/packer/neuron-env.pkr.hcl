# Packer example: a Trn2 AMI with the Neuron PyTorch backend, using the same steps as the
# EC2 Image Builder component (scripts/imagebuilder/neuron-env.yaml).
#   packer init . && packer build -var region=us-east-2 .
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
  type    = string
  default = "neuron-env==0.1.0"
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

  # build: neuron-env itself, then the backend
  provisioner "shell" {
    execute_command = "sudo -E bash -euo pipefail '{{ .Path }}'"
    inline = [
      "python3 -m venv /opt/neuron-env",
      "/opt/neuron-env/bin/python -m pip install --quiet --disable-pip-version-check -- '${var.neuron_env_source}'",
      "mkdir -p /var/log/neuron-env",
      "/opt/neuron-env/bin/neuron-env install --yes --venv /opt/neuron-venv --python python3 --torch ${var.torch} --format json > /var/log/neuron-env/install.json",
    ]
  }

  # validate: doctor for the target type, without device checks on the build instance. Its exit
  # code is kept, the reports are fetched, THEN a failed validation fails the build: the JUnit
  # report is there exactly when it matters.
  provisioner "shell" {
    execute_command = "sudo -E bash -euo pipefail '{{ .Path }}'"
    inline = [
      "rc=0; /opt/neuron-env/bin/neuron-env doctor --python /opt/neuron-venv/bin/python --instance-type ${var.target_instance_type} --skip smoke --report json:/var/log/neuron-env/doctor-validate.json --report junit:/var/log/neuron-env/doctor-validate.xml || rc=$?",
      "echo \"$rc\" > /var/log/neuron-env/doctor-validate.rc",
    ]
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/log/neuron-env/doctor-validate.xml"
    destination = "reports/doctor-validate.xml"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/log/neuron-env/doctor-validate.json"
    destination = "reports/doctor-validate.json"
  }

  provisioner "shell" {
    inline = [
      "rc=$(cat /var/log/neuron-env/doctor-validate.rc); [ \"$rc\" = 0 ] || { echo \"neuron-env doctor failed (exit $rc): see reports/doctor-validate.xml\" >&2; exit \"$rc\"; }",
    ]
  }
}
