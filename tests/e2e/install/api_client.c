/* A program of the PMD's public API, built with nothing but
 * `pkg-config --cflags --libs libmlx5async` of an install: probes the
 * device its --vdev names and prints what the API says of it. */
#include <stdio.h>

#include <rte_eal.h>
#include <rte_vdpa.h>

#include <rte_pmd_mlx5async.h>

int main(int argc, char **argv)
{
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "api-client: EAL init failed\n");
		return 1;
	}
	struct rte_vdpa_device *dev = rte_vdpa_find_device_by_name("vdpa_mlx5async0");
	if (dev == NULL || !rte_pmd_mlx5async_is_mine(dev)) {
		fprintf(stderr, "api-client: no vdpa_mlx5async0 device\n");
		return 1;
	}
	struct rte_pmd_mlx5async_dev_info info;
	int rc = rte_pmd_mlx5async_get_dev_info(dev, &info);
	if (rc != 0) {
		fprintf(stderr, "api-client: get_dev_info: %d\n", rc);
		return 1;
	}
	printf("api-client: %s backend %s virtqs %u of %u\n", info.name, info.backend,
	       info.queues, info.max_queues);
	rte_eal_cleanup();
	return 0;
}
