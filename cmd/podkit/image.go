package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
)

// imageFlags are the flags every `podkit image` subcommand shares.
type imageFlags struct {
	root, registryConfig, credentials string
}

func (f *imageFlags) service() (*image.Service, authn.Keychain, error) {
	cfg := image.Config{Root: f.root, Log: slog.Default()}
	if f.registryConfig != "" {
		rc, err := image.LoadRegistryConfig(f.registryConfig)
		if err != nil {
			return nil, nil, err
		}
		cfg.Registries = rc
	}
	var keychain authn.Keychain = authn.DefaultKeychain
	if f.credentials != "" {
		kr, err := image.LoadKeyringFile(f.credentials)
		if err != nil {
			return nil, nil, err
		}
		cfg.NodeKeyring = kr
		keychain = kr
	}
	svc, err := image.New(cfg)
	return svc, keychain, err
}

func newImageCommand() *cobra.Command {
	f := &imageFlags{}
	cmd := &cobra.Command{Use: "image", Short: "Pull, list, remove, import, build and push images in a node's image store"}
	cmd.PersistentFlags().StringVar(&f.root, "root", "/var/lib/podkit/images", "image store directory")
	cmd.PersistentFlags().StringVar(&f.registryConfig, "registry-config", "", "registries.yaml with mirrors, TLS and credentials per host")
	cmd.PersistentFlags().StringVar(&f.credentials, "credentials", "", "docker config.json with registry credentials")

	cmd.AddCommand(&cobra.Command{
		Use: "pull REF", Short: "Pull an image", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, kc, err := f.service()
			if err != nil {
				return err
			}
			img, err := svc.Pull(cmd.Context(), args[0], kc)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", strings.Join(img.RepoTags, ","), img.ID)
			return nil
		},
	})
	var output string
	ls := &cobra.Command{
		Use: "ls", Short: "List images with their sizes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, _, err := f.service()
			if err != nil {
				return err
			}
			imgs, err := svc.List(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				data, err := image.MarshalImages(imgs)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(data))
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tID\tSIZE")
			for _, img := range imgs {
				name := "<none>"
				if len(img.RepoTags) > 0 {
					name = strings.Join(img.RepoTags, ",")
				}
				fmt.Fprintf(tw, "%s\t%.19s\t%s\n", name, img.ID, resource.NewQuantity(img.Size, resource.BinarySI))
			}
			return tw.Flush()
		},
	}
	ls.Flags().StringVarP(&output, "output", "o", "", "output format: json")
	cmd.AddCommand(ls)
	cmd.AddCommand(&cobra.Command{
		Use: "rm REF", Short: "Remove an image", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, _, err := f.service()
			if err != nil {
				return err
			}
			return svc.Remove(cmd.Context(), args[0])
		},
	})
	var tag string
	imp := &cobra.Command{
		Use: "import FILE", Short: "Import a docker-archive or OCI-layout tarball", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, _, err := f.service()
			if err != nil {
				return err
			}
			file, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer file.Close()
			imgs, err := svc.Import(cmd.Context(), file, tag)
			if err != nil {
				return err
			}
			for _, img := range imgs {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", strings.Join(img.RepoTags, ","), img.ID)
			}
			return nil
		},
	}
	imp.Flags().StringVar(&tag, "tag", "", "tag the imported image")
	cmd.AddCommand(imp)
	cmd.AddCommand(newImageBuildCommand(f))
	cmd.AddCommand(&cobra.Command{
		Use: "push REF DEST", Short: "Push a stored image to a registry", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, kc, err := f.service()
			if err != nil {
				return err
			}
			return svc.Push(cmd.Context(), args[0], args[1], kc)
		},
	})
	return cmd
}

func newImageBuildCommand(f *imageFlags) *cobra.Command {
	var dir, binary, tag string
	var entrypoint []string
	cmd := &cobra.Command{
		Use:   "build (--dir DIR | --binary PATH) --tag REF",
		Short: "Build a single-layer image from a directory or a static binary, without internet",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (dir == "") == (binary == "") {
				return fmt.Errorf("exactly one of --dir and --binary is required")
			}
			if tag == "" {
				return fmt.Errorf("--tag is required")
			}
			svc, _, err := f.service()
			if err != nil {
				return err
			}
			cfg := build.Config{Entrypoint: entrypoint}
			img, err := buildImage(dir, binary, cfg)
			if err != nil {
				return err
			}
			stored, err := svc.Put(cmd.Context(), img, tag)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", strings.Join(stored.RepoTags, ","), stored.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to make the image's root filesystem")
	cmd.Flags().StringVar(&binary, "binary", "", "static binary to make the image's only file and entrypoint")
	cmd.Flags().StringVar(&tag, "tag", "", "reference to store the image under")
	cmd.Flags().StringSliceVar(&entrypoint, "entrypoint", nil, "entrypoint of the image")
	return cmd
}

func newRegistryCommand() *cobra.Command {
	var dataDir, host string
	var port int
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Run an OCI registry with blobs on disk (127.0.0.1 by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return registry.Run(cmd.Context(), registry.Config{DataDir: dataDir, Addr: fmt.Sprintf("%s:%d", host, port), Log: slog.Default()})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "/var/lib/podkit/registry", "directory holding blobs and manifests")
	cmd.Flags().StringVar(&host, "host", "127.0.0.1", "address to listen on")
	cmd.Flags().IntVar(&port, "port", 5000, "port to listen on")
	return cmd
}

func buildImage(dir, binary string, cfg build.Config) (v1.Image, error) {
	if dir != "" {
		return build.FromDir(dir, cfg)
	}
	return build.FromBinary(binary, cfg)
}
